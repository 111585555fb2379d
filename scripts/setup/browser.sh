#!/usr/bin/env bash
# Installs what the browser tests of the web interface use: Debian's chromium (via apt, if
# missing) and playwright-core from npm (cached in $MOSAIC_CACHE, keyed by its version).
# Prints (for eval):  MOSAIC_CHROMIUM=<binary>  MOSAIC_PLAYWRIGHT_DIR=<dir with node_modules>
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PLAYWRIGHT_VERSION="${MOSAIC_PLAYWRIGHT_VERSION:-1.65.1}"
PLAYWRIGHT_DIR="$MOSAIC_CACHE/playwright-core-$PLAYWRIGHT_VERSION"

find_chromium() {
    local candidate
    for candidate in "${MOSAIC_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            CHROMIUM=$candidate
            return 0
        fi
    done
    return 1
}

install_chromium() {
    find_chromium && return 0
    command -v apt-get >/dev/null || die "chromium is missing and apt-get is not available; install chromium and set MOSAIC_CHROMIUM"
    local sudo=()
    [[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
    log "installing chromium with apt-get (log: $MOSAIC_CACHE/logs/chromium.log)"
    quiet chromium "${sudo[@]}" apt-get update
    quiet chromium env DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends chromium
    find_chromium || die "apt-get installed chromium but no binary was found"
}

install_playwright() {
    [[ -f "$PLAYWRIGHT_DIR/.complete" ]] && return 0
    command -v npm >/dev/null || die "npm is missing (install nodejs and npm)"
    log "installing playwright-core@$PLAYWRIGHT_VERSION from npm into $PLAYWRIGHT_DIR"
    rm -rf "$PLAYWRIGHT_DIR"
    mkdir -p "$PLAYWRIGHT_DIR"
    # playwright-core downloads no browser: the tests use the system's chromium.
    quiet playwright npm install --prefix "$PLAYWRIGHT_DIR" --no-audit --no-fund \
        --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION"
    [[ -f "$PLAYWRIGHT_DIR/node_modules/playwright-core/package.json" ]] \
        || die "npm did not install playwright-core"
    touch "$PLAYWRIGHT_DIR/.complete"
}

with_lock chromium install_chromium
find_chromium || die "no chromium found after installation"
with_lock "playwright-core-$PLAYWRIGHT_VERSION" install_playwright
log "ok: chromium ($("$CHROMIUM" --version 2>/dev/null || echo unknown version)) and playwright-core $PLAYWRIGHT_VERSION ready"
echo "MOSAIC_CHROMIUM=$CHROMIUM"
echo "MOSAIC_PLAYWRIGHT_DIR=$PLAYWRIGHT_DIR"
