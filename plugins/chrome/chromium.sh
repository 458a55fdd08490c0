# Shared by the Chromium hooks (sourced, not a hook): finds the browser and the flags it needs
# headless and offline. Set CHROME_BINARY to choose the binary.
find_chromium() {
    for candidate in "${CHROME_BINARY:-}" chromium chromium-browser google-chrome-stable google-chrome; do
        [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 && { command -v "$candidate"; return 0; }
    done
    return 1
}

# --no-sandbox: abxd may run hooks as root; the background-networking flags keep Chromium from
# calling home on a closed network.
CHROMIUM_FLAGS="--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic --no-first-run \
--disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
--mute-audio --no-default-browser-check"

# Sets $chromium, or says why not and exits 10 (skipped). Call it before redirecting stdout.
require_chromium() {
    chromium=$(find_chromium) || { echo "skipped: chromium not found (install chromium or set CHROME_BINARY)"; exit 10; }
}

# Runs $chromium once for $URL with a throw-away profile and the extra flags given.
run_chromium_once() {
    profile=$(mktemp -d "$PWD/.profile.XXXXXX")
    trap 'rm -rf "$profile"' EXIT
    # shellcheck disable=SC2086
    "$chromium" $CHROMIUM_FLAGS --user-data-dir="$profile" --timeout=$(( ${TIMEOUT:-60} * 1000 / 2 )) "$@" "$URL"
}
