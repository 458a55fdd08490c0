#!/bin/bash
# Snapshot hook: a PNG screenshot of the page by headless Chromium, to screenshot.png.
set -u
. "$(dirname "$0")/../chrome/chromium.sh"
require_chromium
run_chromium_once --window-size=1280,1024 --screenshot="$PWD/screenshot.png" >&2 || exit 1
[ -s screenshot.png ] || { echo "chromium wrote no screenshot" >&2; exit 1; }
echo "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"screenshot.png, $(wc -c < screenshot.png) bytes\"}"
