#!/usr/bin/env bash
# Run here, on the development machine, before a call to the GPU machine:
# that machine has CUDA, Python and CMake but no network, and may lack the
# Debian libraries ptreg builds against. This makes .gpu/ (ignored by git,
# carried with the call: `carry: [".gpu"]`):
#   .gpu/bin    ptreg, the device tests and the GPU benchmarks, built here with both
#               backends and without MPI
#   .gpu/lib    the shared libraries they need beyond glibc and libgcc_s
#               (bench/gpu/bundle-libs.sh), and the OpenCL ICD loader, which
#               ptreg opens at run time
#   .gpu/data   the Stanford bunny scans and the LiDAR pair for the benchmarks
# bench/gpu/run.sh builds afresh on the GPU machine when it can, and falls
# back to .gpu/bin otherwise. Needs CUDA's headers (for the CUDA backend).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/.gpu
build=$root/build-gpu-prepare
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/data/bunny"
# without MPI: it serves `mpirun ptreg batch` alone, which the GPU run never
# starts, and Open MPI's libraries load plugins from their install folder
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPTREG_CUDA=ON -DPTREG_OPENCL=ON -DPTREG_MPI=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
mapfile -t programs < <("$root/bench/gpu/bundle-libs.sh" programs "$build")
cp "${programs[@]}" "$out/bin/"
if "$out/bin/ptreg" --version | grep "mpi: yes" >/dev/null; then
    echo "prepare.sh: $build/ptreg is built with MPI (a stale cache?): remove $build" >&2
    exit 1
fi
for lib in /usr/lib/x86_64-linux-gnu/libOpenCL.so.1; do
    [ -e "$lib" ] && cp -L "$lib" "$out/lib/"
done
# every library outside the base system (bundle-libs.sh says which), and
# proof that nothing is left out: a program that needs a library neither the
# base system nor .gpu/lib gives fails here rather than on the GPU machine's
# clock (make check runs the same check on its own build: cli_gpu_bundle)
shopt -s nullglob
"$root/bench/gpu/bundle-libs.sh" copy "$out/lib" "$out"/bin/* "$out"/lib/*
shopt -u nullglob
"$root/bench/gpu/bundle-libs.sh" check "$out/lib" "$out"/bin/*
for f in bunny/bun000.ply bunny/bun045.ply bunny/bun.conf lidar/source.ply lidar/target.ply lidar/T_target_source.txt; do
    mkdir -p "$out/data/$(dirname "$f")"
    [ -e "$root/../shared/data/$f" ] && cp "$root/../shared/data/$f" "$out/data/$f"
done
echo "prepared $out ($(du -sh "$out" | cut -f1)): carry it with the call; then run bench/gpu/run.sh OUTDIR there"
