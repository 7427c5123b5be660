#!/bin/sh
# ptreg's Python package (python/), built against a libptreg and installed
# with Debian's pip and setuptools, offline:
#
#   install-python.sh --prefix PREFIX       the library `cmake --install` put under
#                                           PREFIX; into PREFIX/lib/python3.X/dist-packages,
#                                           where Debian's python3 looks for /usr/local
#   install-python.sh --build BUILD SITE    the library built in BUILD (this tree's
#                                           headers); into the folder SITE (the tests)
#
# The extension keeps the library's folder as its run path. PYTHON picks the
# interpreter (default /usr/bin/python3, which sees Debian's numpy).
set -eu
PY=${PYTHON:-/usr/bin/python3}
TREE=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
--prefix)
    PREFIX=$(cd "$2" && pwd)
    pc=$(find "$PREFIX" -name ptreg.pc -path '*pkgconfig*' | head -n 1)
    if [ -z "$pc" ]; then
        echo "install-python: no ptreg.pc under $PREFIX: install the library first" >&2
        exit 1
    fi
    include="$PREFIX/include"
    libdir=$(cd "$(dirname "$pc")/.." && pwd)
    site="$PREFIX/lib/python3.$("$PY" -c 'import sys; print(sys.version_info[1])')/dist-packages"
    ;;
--build)
    include="$TREE/include"
    libdir=$(cd "$2" && pwd)
    site=$3
    ;;
*)
    echo "usage: install-python.sh --prefix PREFIX | --build BUILD SITE" >&2
    exit 2
    ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a copy, so the build leaves nothing in the source tree
cp -r "$TREE/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info "$work/src/tests"
mkdir -p "$site"
PTREG_INCLUDE_DIR="$include" PTREG_LIBRARY_DIR="$libdir" PIP_ROOT_USER_ACTION=ignore \
    "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --no-index \
    --upgrade --target "$site" "$work/src"
echo "ptreg's Python package: $site"
