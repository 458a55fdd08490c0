#!/bin/bash
# Background snapshot hook: the page with its requisites (images, CSS, scripts), via wget, into
# this directory. Runs alongside the other hooks; if the snapshot ends first, it stops wget and
# reports that it was cut short.
set -u
url=""
for arg in "$@"; do case "$arg" in --url=*) url="${arg#--url=}" ;; esac; done
command -v wget >/dev/null 2>&1 || { echo "skipped: wget not found (install wget)"; exit 10; }
case "$url" in http://*|https://*) ;; *) echo "skipped: wget fetches http(s) URLs only"; exit 10 ;; esac
wget --quiet --page-requisites --convert-links --adjust-extension --no-parent -e robots=off \
    --timeout=30 --tries=2 --directory-prefix=. "$url" &
fetcher=$!
# The first output tells abxd the hook is up: the next hooks run alongside.
echo "wget fetching $url"
trap 'kill -TERM "$fetcher" 2>/dev/null; wait "$fetcher"; echo "{\"type\":\"ArchiveResult\",\"status\":\"failed\",\"output_str\":\"stopped at the end of the snapshot\"}"; exit 1' TERM INT
wait "$fetcher"
code=$?
files=$(find . -type f ! -path './logs/*' | wc -l)
if [ "$code" -eq 0 ] || [ "$code" -eq 8 ] && [ "$files" -gt 0 ]; then
    echo "{\"type\":\"ArchiveResult\",\"status\":\"succeeded\",\"output_str\":\"$files files (wget exit $code)\"}"
    exit 0
fi
echo "wget failed with exit code $code" >&2
exit 1
