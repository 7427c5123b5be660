#!/usr/bin/env bash
# The device parity suite on the CUDA stand-in with a work-group's threads
# run one after another between barriers (POCL_WORK_GROUP_METHOD=loops) in
# reverse and in a scattered order (CUDA_STANDIN_ORDER), against the forward
# order. Every case must pass in each, and give the same bits as forward
# (the digests its lines end with): a kernel whose answer depends on the
# order its threads run in has a race a GPU would show one day. One POCL
# thread runs the work-groups one after another: with several, POCL 3.1
# mixes up work-groups of a kernel whose thread numbers are scattered
# (README.md, "Limits").
#   tests/cuda_standin/orders.sh PARITY_PROGRAM WORK_DIR [FORWARD_LOG]
# FORWARD_LOG: the output of a forward run already made (the
# device_parity_cuda test's, whole or quick: the cases both have are
# compared); without it the forward run is made here. Environment as for
# scripts/with-cuda-standin.sh (PTREG_BUILD ...); PTREG_PARITY_QUICK is set.
set -uo pipefail
parity=${1:?usage: orders.sh PARITY_PROGRAM WORK_DIR [FORWARD_LOG]}
work=${2:?usage: orders.sh PARITY_PROGRAM WORK_DIR [FORWARD_LOG]}
forward_log=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
failed=0
# "OPERATION CASE #OCCURRENCE bits" for each line that has a digest (a case
# prints one line per variant, in a fixed order)
digests() {
    awk '/\[bits [0-9a-f]+\]$/ {i = index($0, ": "); key = substr($0, 6, i - 6); gsub(/ +/, " ", key);
         match($0, /\[bits [0-9a-f]+\]$/); print key " #" ++seen[key], substr($0, RSTART + 6, RLENGTH - 7)}' "$1"
}
run_order() {
    PTREG_TEST_DEVICE=cuda:0 PTREG_PARITY_QUICK=1 POCL_WORK_GROUP_METHOD=loops POCL_MAX_PTHREAD_COUNT=1 \
        CUDA_STANDIN_ORDER=$1 "$root/scripts/with-cuda-standin.sh" "$parity" >"$work/$1.txt" 2>&1
    local rc=$?
    echo "$1: exit $rc, $(tail -1 "$work/$1.txt")"
    if [ "$rc" -ne 0 ]; then
        grep -E "^FAIL|VIOLATION" "$work/$1.txt" | head -20
        failed=1
    fi
}
if [ -n "$forward_log" ]; then
    cp "$forward_log" "$work/forward.txt" || exit 1
    echo "forward: $forward_log, $(tail -1 "$work/forward.txt")"
else
    run_order forward
fi
digests "$work/forward.txt" >"$work/forward.bits"
if [ ! -s "$work/forward.bits" ]; then
    echo "FAIL: the forward run printed no digests"
    exit 1
fi
for order in reverse shuffle; do
    run_order "$order"
    digests "$work/$order.txt" >"$work/$order.bits"
    # every case of this run against forward's (forward may hold more)
    awk '{bits = $NF; key = $0; sub(/ [0-9a-f]+$/, "", key)}
         NR == FNR {forward[key] = bits; next}
         !(key in forward) || forward[key] != bits {print key ": " bits " vs " (key in forward ? forward[key] : "none")}' \
        "$work/forward.bits" "$work/$order.bits" >"$work/$order.diff"
    if [ ! -s "$work/$order.bits" ] || [ -s "$work/$order.diff" ]; then
        echo "FAIL: threads run in $order order give other bits than forward (case, $order's digest, forward's):"
        head -20 "$work/$order.diff"
        failed=1
    fi
done
[ "$failed" -eq 0 ] && echo "every case the same bits in all three orders"
exit "$failed"
