#!/usr/bin/env bash
# The stand-in's incoherent mode (README.md, CUDA_STANDIN_INCOHERENT) on
# LDDMM's parity cases in double precision whose groups hand
# partial sums to a last group:
#   1       CUDA's semantics, the fused combine (__threadfence both sides
#           of the count): must pass;
#   opencl  OpenCL 1.2's, the second launch that OpenCL's build takes
#           (PTREG_LDDMM_COMBINE=split): must pass;
#   opencl  the fused combine under OpenCL 1.2's semantics (mem_fence and a
#           relaxed count: LDDMM's combine before issue 48): must FAIL, or
#           the mode would catch nothing.
#   tests/cuda_standin/incoherent.sh PARITY_PROGRAM WORK_DIR
# Environment as for scripts/with-cuda-standin.sh (PTREG_BUILD ...).
set -uo pipefail
parity=${1:?usage: incoherent.sh PARITY_PROGRAM WORK_DIR}
work=${2:?usage: incoherent.sh PARITY_PROGRAM WORK_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
failed=0
# run NAME MODE COMBINE: the exit code in $rc, the output in WORK/NAME.txt
run() {
    CUDA_STANDIN_INCOHERENT=$2 PTREG_LDDMM_COMBINE=$3 PTREG_TEST_DEVICE=cuda:0 PTREG_TEST_REQUIRE_DEVICE=1 \
        PTREG_PARITY_QUICK=1 PTREG_PARITY_ONLY=lddmm-splits "$root/scripts/with-cuda-standin.sh" "$parity" \
        >"$work/$1.txt" 2>&1
    rc=$?
    echo "$1 (CUDA_STANDIN_INCOHERENT=$2, PTREG_LDDMM_COMBINE=$3): exit $rc, $(tail -1 "$work/$1.txt")"
}
for pass in "cuda 1 auto" "opencl-split opencl split"; do
    set -- $pass
    run "$@"
    if [ "$rc" -ne 0 ]; then
        grep -E "^FAIL|VIOLATION" "$work/$1.txt" | head -20
        failed=1
    fi
done
run opencl-fused opencl auto
# the parity check, not a crash or a violation, must be what fails: a case
# of several splits (n=129: two row blocks of two; n=300: three splits)
if [ "$rc" -eq 0 ] || ! grep -qE "^FAIL lddmm +n=(129|300) " "$work/opencl-fused.txt" ||
    grep -q VIOLATION "$work/opencl-fused.txt"; then
    echo "FAIL: the fused combine under OpenCL's semantics passed the incoherent mode (or failed otherwise):"
    grep -E "^(ok|FAIL)|VIOLATION" "$work/opencl-fused.txt" | cut -c1-200 | head -20
    failed=1
else
    echo "the fused combine under OpenCL's semantics fails, as it must:"
    grep -E "^FAIL" "$work/opencl-fused.txt" | cut -c1-160 | head -4
fi
[ "$failed" -eq 0 ] && echo "the incoherent mode catches the old combine and passes the new ones"
exit "$failed"
