#!/usr/bin/env bash
# The test suite under valgrind's memcheck: the CLI tests (tests/cli/*.sh)
# with every ptreg process under tests/valgrind/ptreg, and the test
# programs (tests/test_*.c) themselves. No memory error and no definite or
# indirect leak may appear in any process.
#
#   tests/valgrind/run.sh PTREG [TEST...]   TEST: a tests/cli name (icp) or a
#                                           test program (test_icp); default all
#
# The test programs are taken from PTREG's build folder (BUILD/tests). Left
# out: the CLI tests install and python (they run no ptreg process of their
# own that this could wrap), batch_mpi (Open MPI's own reports under
# valgrind need its suppression files; ASan covers it in check-sanitize) and
# data (real scans: hours under valgrind); the programs test_device and
# test_device_parity (POCL compiling every kernel under memcheck: hours; the
# CLI test devices and ASan cover that path) and test_kernels_nvrtc (NVRTC
# compiling for sm_90). Reports: build-valgrind/logs/TEST/.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
ptreg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
programs=$(dirname "$ptreg")/tests
shift
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    for t in "$root"/tests/cli/*.sh; do
        name=$(basename "$t" .sh)
        case $name in lib | install | python | batch_mpi | data) continue ;; esac
        tests+=("$name")
    done
    for t in "$root"/tests/test_*.c; do
        name=$(basename "$t" .c)
        case $name in test_device | test_device_parity | test_kernels_nvrtc) continue ;; esac
        tests+=("$name")
    done
fi
logs=${VALGRIND_LOGS:-$root/build-valgrind/logs}
failed=()

# One test: a test program under valgrind directly, or a CLI script whose
# ptreg is the wrapper. Its exit code; 77 is a skip.
run_one() {
    local name=$1
    if [[ $name == test_* ]]; then
        (cd "$programs" && PTREG_REAL="$programs/$name" PTREG_VALGRIND_LOGS=$logs/$name \
            "$root/tests/valgrind/ptreg")
    else
        PTREG_REAL=$ptreg PTREG_VALGRIND_LOGS=$logs/$name \
            bash "$root/tests/cli/$name.sh" "$root/tests/valgrind/ptreg" "${PTREG_TEST_DATA_DIR:-}"
    fi
}

for name in "${tests[@]}"; do
    rm -rf "${logs:?}/$name" && mkdir -p "$logs/$name"
    start=$SECONDS
    run_one "$name" >"$logs/$name.out" 2>&1
    rc=$?
    [ "$rc" -eq 77 ] && rc=0
    processes=$(find "$logs/$name" -name '*.log' | wc -l)
    reports=$(find "$logs/$name" -name '*.log' -size +0 | wc -l)
    printf '%-18s %4d processes, %d with a report, test exit %d (%ds)\n' "$name" "$processes" "$reports" "$rc" \
        $((SECONDS - start))
    if [ "$reports" -ne 0 ] || [ "$rc" -ne 0 ]; then
        failed+=("$name")
        find "$logs/$name" -name '*.log' -size +0 | head -3 | xargs -r head -40
        [ "$rc" -ne 0 ] && tail -20 "$logs/$name.out"
    fi
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "valgrind: ${failed[*]} failed" >&2
    exit 1
fi
echo "valgrind: ${#tests[@]} tests clean"
