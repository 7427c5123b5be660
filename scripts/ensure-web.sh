#!/usr/bin/env bash
# web/'s npm packages, pinned by web/package-lock.json: three.js and esbuild,
# which the build bundles into the HTML reports' viewer, and puppeteer-core,
# which drives Chromium in the browser tests (tests/html). `npm ci` runs when
# web/node_modules is missing or older than the lock file; npm itself comes
# from Debian (nodejs, npm) when it is missing (scripts/ensure-deps.sh).
# usage: scripts/ensure-web.sh [--optional]
# --optional (make deps): when npm or the registry cannot be had, say so and
# succeed: the library is then built without the viewer (cmake/report.cmake).
set -uo pipefail
optional=0
[ "${1:-}" = "--optional" ] && optional=1
scripts=$(cd "$(dirname "$0")" && pwd)
web=$(cd "$scripts/.." && pwd)/web

give_up() {
    echo "ptreg: $*" >&2
    if [ "$optional" -eq 1 ]; then
        echo "ptreg: going on without them: the HTML reports (--html) will be missing from this build" >&2
        exit 0
    fi
    exit 1
}

# npm writes node_modules/.package-lock.json on every install: newer than
# the lock file, the packages are the ones it pins
stamp=$web/node_modules/.package-lock.json
[ -f "$stamp" ] && [ "$stamp" -nt "$web/package-lock.json" ] && exit 0

if ! command -v npm >/dev/null 2>&1; then
    "$scripts/ensure-deps.sh" nodejs npm || give_up "npm is missing: web/'s packages (three.js, esbuild, \
puppeteer-core) are installed with it (Debian: nodejs npm)"
fi
echo "installing web/'s npm packages (npm ci in $web)"
(cd "$web" && npm ci --no-audit --no-fund) || give_up "npm ci in web/ failed (it needs the npm registry once; \
run it again with the network, or copy web/node_modules from a machine that has it)"
