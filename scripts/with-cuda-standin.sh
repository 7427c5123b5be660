#!/usr/bin/env bash
# Runs a command with the CUDA driver stand-in (tests/cuda_standin/README.md):
# ptreg's CUDA path on POCL, within an H100's limits, its mistakes reported.
#   scripts/with-cuda-standin.sh [--auto] COMMAND [ARG...]
# --auto lets --device auto pick the stand-in (otherwise only cuda:0 does).
# The stand-in is looked for in $PTREG_BUILD/cuda_standin (PTREG_BUILD:
# default build/). Records of the compiled images and the kernel cache go in
# $CUDA_STANDIN_DIR (default: BUILD/cuda_standin/state), so that an image
# from the cache is always one the stand-in can run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
auto=0
if [ "${1:-}" = "--auto" ]; then
    auto=1
    shift
fi
if [ $# -eq 0 ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    [ $# -eq 0 ] && exit 2 || exit 0
fi
build=${PTREG_BUILD:-$root/build}
lib=$build/cuda_standin
if [ ! -e "$lib/libcuda.so.1" ] || [ ! -e "$lib/libnvrtc-standin.so" ]; then
    echo "with-cuda-standin: no stand-in in $lib (build ptreg with the CUDA and OpenCL backends: make build)" >&2
    exit 2
fi
export CUDA_STANDIN_DIR=${CUDA_STANDIN_DIR:-$lib/state}
mkdir -p "$CUDA_STANDIN_DIR"
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PTREG_NVRTC=$lib/libnvrtc-standin.so
export PTREG_KERNEL_CACHE=$CUDA_STANDIN_DIR/kernels
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$CUDA_STANDIN_DIR/pocl}
[ "$auto" = 1 ] && export PTREG_CUDA_STANDIN_AUTO=1
exec "$@"
