#!/bin/bash
# Snapshot hook: the DOM after scripts ran, as headless Chromium serializes it, to output.html.
set -u
. "$(dirname "$0")/../chrome/chromium.sh"
require_chromium
run_chromium_once --dump-dom > output.html || exit 1
[ -s output.html ] || { echo "chromium wrote an empty DOM" >&2; exit 1; }
echo "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"output.html, $(wc -c < output.html) bytes\"}"
