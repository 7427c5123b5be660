#!/usr/bin/env bash
# The CLI tests (tests/cli/*.sh) with every ptreg process under valgrind's
# memcheck (tests/valgrind/ptreg): no memory error, no definite or indirect
# leak, in any process.
#
#   tests/valgrind/run.sh PTREG [TEST...]     TEST: a tests/cli name, e.g. icp
#
# Left out: install and python (they run no ptreg process of their own
# that this could wrap), batch_mpi (Open MPI's own reports under valgrind
# need its suppression files; ASan covers it in check-sanitize) and data
# (real scans: hours under valgrind). Reports: build-valgrind/logs/TEST/.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
ptreg=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    for t in "$root"/tests/cli/*.sh; do
        name=$(basename "$t" .sh)
        case $name in lib | install | python | batch_mpi | data) continue ;; esac
        tests+=("$name")
    done
fi
logs=${VALGRIND_LOGS:-$root/build-valgrind/logs}
failed=()
for name in "${tests[@]}"; do
    rm -rf "${logs:?}/$name" && mkdir -p "$logs/$name"
    start=$SECONDS
    PTREG_REAL=$ptreg PTREG_VALGRIND_LOGS=$logs/$name \
        bash "$root/tests/cli/$name.sh" "$root/tests/valgrind/ptreg" "${PTREG_TEST_DATA_DIR:-}" >"$logs/$name.out" 2>&1
    rc=$?
    processes=$(find "$logs/$name" -name '*.log' | wc -l)
    reports=$(find "$logs/$name" -name '*.log' -size +0 | wc -l)
    printf '%-12s %4d processes, %d with a report, test exit %d (%ds)\n' "$name" "$processes" "$reports" "$rc" \
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
echo "valgrind: ${#tests[@]} CLI tests clean"
