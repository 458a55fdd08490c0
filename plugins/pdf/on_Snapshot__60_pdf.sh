#!/bin/bash
# Snapshot hook: the page printed to PDF by headless Chromium, to output.pdf.
set -u
. "$(dirname "$0")/../chrome/chromium.sh"
require_chromium
run_chromium_once --no-pdf-header-footer --print-to-pdf="$PWD/output.pdf" >&2 || exit 1
[ -s output.pdf ] || { echo "chromium wrote no PDF" >&2; exit 1; }
echo "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"output.pdf, $(wc -c < output.pdf) bytes\"}"
