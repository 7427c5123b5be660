# Shared helpers for the CLI tests: sourced, not run (CTest runs *.sh files
# other than this one; see tests/CMakeLists.txt).
set -u
PTREG=$1
DATA=${2:-}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
skipped=0
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the inline Python of the scripts imports the same checks (ptreg_checks)
export PYTHONPATH="$TESTS_DIR${PYTHONPATH:+:$PYTHONPATH}"
# no `ptreg tune` winners from the machine running the tests (tune.sh sets its own)
export PTREG_TUNE_CACHE=off

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# LeakSanitizer's tracer can crash at a sanitized process's exit while a
# driver's threads (POCL's) run, more often under load: "Tracer caught
# signal" (seen on `fpfh --device opencl:0`, three times running in one CI
# run). That is the sanitizer runtime failing after the run itself ended,
# not a finding: such a run is made again once with leak detection off (the
# address and undefined-behaviour checks stay on); any other failure stands.
lsan_tracer_crashed() {
    grep -q "LeakSanitizer has encountered a fatal error" "$WORK/err" && grep -q "Tracer caught signal" "$WORK/err"
}

# expect CODE -- command...: runs it, checks the exit code, keeps its output.
expect() {
    local want=$1; shift; shift
    "$@" >"$WORK/out" 2>"$WORK/err"
    local got=$?
    if [ "$got" -ne "$want" ] && lsan_tracer_crashed; then
        (export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" && "$@") >"$WORK/out" 2>"$WORK/err"
        got=$?
    fi
    if [ "$got" -ne "$want" ]; then
        fail "exit $got (want $want): $*"
        sed 's/^/  stderr: /' "$WORK/err" | head -5 >&2
    fi
}

# checks HOW ARGS...: one numeric check of tests/ptreg_checks.py, e.g.
#   checks json "$WORK/out" rotation_error_deg '<' 0.05
#   checks text "$WORK/out" 'rotation ([^ ]+) deg' '<' 0.05
#   checks tables "$WORK/a.txt" "$WORK/b.txt" 1e-5
# A missing field, JSON's null (cJSON's NaN), a nan or an inf fails, as does
# a false comparison; `checks json-get FILE KEY` prints the finite value.
checks() {
    local said
    if ! said=$(python3 "$TESTS_DIR/ptreg_checks.py" "$@" 2>&1); then
        fail "${said:-ptreg_checks.py $*: failed}"
        return 1
    fi
    [ -z "$said" ] || printf '%s\n' "$said"
}

# missing REQUIRE WHY: a part that cannot run here. Under the variable
# REQUIRE (make check sets PTREG_TEST_REQUIRE_DATA and _DEVICE) that is a
# failure; otherwise a skip, and the script ends 77 (skipped), not ok.
missing() {
    if [ "${!1:-0}" != 0 ]; then
        fail "$2 ($1=1 requires it)"
    else
        echo "skipped: $2"
        skipped=1
    fi
}

# has_data: whether the shared data folder (../shared/data) is here; if
# not, `missing` says so and the caller leaves its data checks out.
has_data() {
    [ -n "$DATA" ] && [ -f "$DATA/README.md" ] && return 0
    missing PTREG_TEST_REQUIRE_DATA "the shared data folder is not at '${DATA:-(none given)}': its checks did not run"
    return 1
}

# has_opencl: whether ptreg finds an OpenCL device (in CI: POCL, the CPU
# OpenCL driver); if not, `missing` says so.
has_opencl() {
    "$PTREG" devices --json | grep -q '"device":	"opencl:0"' && return 0
    missing PTREG_TEST_REQUIRE_DEVICE "no OpenCL device: the device runs did not run"
    return 1
}

# PY: a python3 with numpy (Debian's, which make check's test-deps install);
# without one the script skips (77).
numpy_python() {
    PY=python3
    [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
    "$PY" -c 'import numpy' 2>/dev/null || { echo "skipped: no numpy"; exit 77; }
}
out_has() { grep -q -- "$1" "$WORK/out" || fail "stdout lacks '$1'"; }
err_has() { grep -q -- "$1" "$WORK/err" || fail "stderr lacks '$1'"; }
no_file() { [ ! -e "$1" ] || fail "$1 exists but should not"; }
has_file() { [ -s "$1" ] || fail "$1 missing or empty"; }

# Whether this ptreg writes --html pages: it was built with web/'s viewer
# (`make deps`); without it --html is a usage error saying so.
html_viewer() {
    ! "$PTREG" normals "$WORK/no-such-cloud.ply" --html "$WORK/viewer-probe.html" 2>&1 |
        grep -q "without the report viewer"
}

finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$failures failures" >&2
        exit 1
    fi
    if [ "$skipped" -ne 0 ]; then
        echo "ok, but a section was skipped (above): exit 77"
        exit 77
    fi
    echo "ok"
    exit 0
}
