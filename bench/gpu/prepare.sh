#!/usr/bin/env bash
# Run here, on the development machine, before a call to the GPU machine:
# that machine has CUDA, Python and CMake but no network, and may lack the
# Debian libraries ptreg builds against. This makes .gpu/ (ignored by git,
# carried with the call: `carry: [".gpu"]`):
#   .gpu/bin    ptreg, the device tests and the GPU benchmarks, built here with both backends
#   .gpu/lib    the shared libraries they need beyond glibc (and the OpenCL
#               ICD loader, which ptreg opens at run time)
#   .gpu/data   the Stanford bunny scans and the LiDAR pair for the benchmarks
# bench/gpu/run.sh builds afresh on the GPU machine when it can, and falls
# back to .gpu/bin otherwise. Needs CUDA's headers (for the CUDA backend).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/.gpu
build=$root/build-gpu-prepare
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/data/bunny"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTREG_CUDA=ON -DPTREG_OPENCL=ON >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
cp "$build/ptreg" "$build/tests/test_device_parity" "$build/tests/test_device" "$build/tests/test_kernels_nvrtc" \
    "$build/bench/batch_gpu" "$build/bench/pairs_gpu" "$build/bench/harris_gpu" "$build/bench/features_gpu" \
    "$out/bin/"
# every library outside glibc and libgcc_s, which every Linux has: the GPU
# machine is not Debian, and CHOLMOD alone pulls in eight more (BLAS, LAPACK,
# METIS, gfortran's runtime...), so a list of names to take misses some
for bin in "$out"/bin/*; do
    ldd "$bin" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|libgcc_s|ld-linux[^/]*)\.so' | while read -r lib; do
    cp -L "$lib" "$out/lib/"
done
# and proof that nothing is left out: a binary that needs a library neither
# glibc nor .gpu/lib gives fails here rather than on the GPU machine's clock
for bin in "$out"/bin/*; do
    missing=$(env -i LD_LIBRARY_PATH="$out/lib" ldd "$bin" | grep -vE '/(libc|libm|libpthread|libdl|librt|libgcc_s|ld-linux[^/]*)\.so|\.gpu/lib/|linux-vdso' || true)
    if [ -n "$missing" ]; then
        echo "$bin: libraries not carried:" >&2
        echo "$missing" >&2
        exit 1
    fi
done
for lib in /usr/lib/x86_64-linux-gnu/libOpenCL.so.1; do
    [ -e "$lib" ] && cp -L "$lib" "$out/lib/"
done
for f in bunny/bun000.ply bunny/bun045.ply bunny/bun.conf lidar/source.ply lidar/target.ply lidar/T_target_source.txt; do
    mkdir -p "$out/data/$(dirname "$f")"
    [ -e "$root/../shared/data/$f" ] && cp "$root/../shared/data/$f" "$out/data/$f"
done
echo "prepared $out ($(du -sh "$out" | cut -f1)): carry it with the call; then run bench/gpu/run.sh OUTDIR there"
