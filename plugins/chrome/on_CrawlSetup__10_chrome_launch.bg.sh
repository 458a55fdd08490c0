#!/bin/bash
# Background crawl hook: one headless Chromium for the whole crawl, with its own profile in the
# crawl dir and remote debugging on a free local port. Writes the DevTools endpoint to
# $CRAWL_DIR/chrome/cdp_url.txt for later hooks; on SIGTERM shuts Chromium down cleanly.
set -u
. "$(dirname "$0")/chromium.sh"
require_chromium
mkdir -p profile
rm -f profile/DevToolsActivePort cdp_url.txt
# shellcheck disable=SC2086
"$chromium" $CHROMIUM_FLAGS --user-data-dir="$PWD/profile" --remote-debugging-address=127.0.0.1 \
    --remote-debugging-port=0 about:blank &
browser=$!
stop() {
    kill -TERM "$browser" 2>/dev/null
    wait "$browser"
    rm -rf profile
    echo '{"type":"ArchiveResult","status":"succeeded","output_str":"chromium shut down"}'
    exit 0
}
trap stop TERM INT
for _ in $(seq 1 300); do
    if [ -s profile/DevToolsActivePort ]; then
        port=$(head -n1 profile/DevToolsActivePort)
        path=$(sed -n 2p profile/DevToolsActivePort)
        echo "ws://127.0.0.1:${port}${path}" > cdp_url.txt
        echo "chromium pid $browser listening on 127.0.0.1:$port"
        break
    fi
    kill -0 "$browser" 2>/dev/null || { echo "chromium exited at start"; exit 1; }
    sleep 0.1
done
[ -s cdp_url.txt ] || { echo "chromium did not open its debugging port"; kill -TERM "$browser"; exit 1; }
wait "$browser"
echo "chromium exited on its own"
exit 1
