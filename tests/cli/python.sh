# ptreg's Python package: built against this build's library by the script
# `make install` uses (scripts/install-python.sh), then its pytest suite
# (python/tests), which checks every call against this CLI.
. "$(dirname "$0")/lib.sh"
BUILD=$(cd "$(dirname "$PTREG")" && pwd)
TREE=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3

expect 0 -- "$TREE/scripts/install-python.sh" --build "$BUILD" "$WORK/site"
has_file "$WORK/site/ptreg/__init__.py"
(cd "$WORK" && PYTHONPATH="$WORK/site" PTREG_CLI="$PTREG" PTREG_TEST_DATA="$DATA" "$PY" -m pytest -q -p no:cacheprovider "$TREE/python/tests") \
    >"$WORK/pytest.log" 2>&1 || { tail -n 60 "$WORK/pytest.log" >&2; fail "pytest"; }
tail -n 1 "$WORK/pytest.log"
# the build left nothing in the source tree
[ ! -e "$TREE/python/build" ] && [ -z "$(ls -d "$TREE"/python/*.egg-info 2>/dev/null)" ] || fail "build files in python/"
finish
