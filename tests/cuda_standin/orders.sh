#!/usr/bin/env bash
# The device parity suite on the CUDA stand-in with a work-group's threads
# run one after another between barriers (POCL_WORK_GROUP_METHOD=loops) in
# three orders: forward, reverse and scattered (CUDA_STANDIN_ORDER). Every
# case must pass in each, and give the same bits in each (the digests its
# lines end with): a kernel whose answer depends on the order its threads
# run in has a race a GPU would show one day. One POCL thread runs the
# work-groups one after another: with several, POCL 3.1 mixes up work-groups
# of a kernel whose thread numbers are scattered (README.md, "Limits").
#   tests/cuda_standin/orders.sh PARITY_PROGRAM WORK_DIR
# Environment as for scripts/with-cuda-standin.sh (PTREG_BUILD ...);
# PTREG_PARITY_QUICK is set (the 40k x 30k cases are left out).
set -uo pipefail
parity=${1:?usage: orders.sh PARITY_PROGRAM WORK_DIR}
work=${2:?usage: orders.sh PARITY_PROGRAM WORK_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
failed=0
# "OPERATION CASE bits" for each line that has a digest
digests() {
    awk '/\[bits [0-9a-f]+\]$/ {i = index($0, ": "); key = substr($0, 6, i - 6); gsub(/ +/, " ", key);
         match($0, /\[bits [0-9a-f]+\]$/); print key, substr($0, RSTART + 6, RLENGTH - 7)}' "$1"
}
for order in forward reverse shuffle; do
    PTREG_TEST_DEVICE=cuda:0 PTREG_PARITY_QUICK=1 POCL_WORK_GROUP_METHOD=loops POCL_MAX_PTHREAD_COUNT=1 \
        CUDA_STANDIN_ORDER=$order \
        "$root/scripts/with-cuda-standin.sh" "$parity" >"$work/$order.txt" 2>&1
    rc=$?
    digests "$work/$order.txt" >"$work/$order.bits"
    echo "$order: exit $rc, $(tail -1 "$work/$order.txt"), $(wc -l <"$work/$order.bits") digests"
    if [ "$rc" -ne 0 ]; then
        grep -E "^FAIL|VIOLATION" "$work/$order.txt" | head -20
        failed=1
    fi
done
if [ ! -s "$work/forward.bits" ]; then
    echo "FAIL: the forward run printed no digests"
    exit 1
fi
for order in reverse shuffle; do
    if ! diff "$work/forward.bits" "$work/$order.bits" >"$work/$order.diff"; then
        echo "FAIL: threads run in $order order give other bits than forward (the case, then its digest):"
        head -20 "$work/$order.diff"
        failed=1
    fi
done
[ "$failed" -eq 0 ] && echo "every case the same bits in all three orders"
exit "$failed"
