#!/usr/bin/env bash
# Fuzzes the cloud readers and the model index loader with libFuzzer
# (clang, ASan, UBSan).
#
#   tests/fuzz/run.sh [SECONDS] [FORMAT...]     FORMAT: ply pcd xyz vtk all index
#
# "index" builds the whole library with the sanitizers (CMake, in
# build-fuzz/lib), seeds the corpus with indexes of a few small clouds, and
# fuzzes fuzz_index.c, which repairs most inputs' checksums so mutations
# reach the checks behind it.
# Builds one fuzzer per format in build-fuzz/ (or $FUZZ_BUILD) from the
# sources directly, seeds its corpus with tests/data/io and, when present,
# the small files of ../shared/data, then runs it for SECONDS (default 60)
# with the keywords of formats.dict. The corpus is kept between runs.
# Crashing inputs land in build-fuzz/crash-<format>/: add each to
# tests/data/io/bad/ and tests/data/io/bad.txt once fixed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
shift || true
formats=("$@")
[ ${#formats[@]} -eq 0 ] && formats=(ply pcd xyz vtk all index)
build=${FUZZ_BUILD:-$root/build-fuzz}
cc=${CC_FUZZ:-clang}
mkdir -p "$build"
# The parts of core the readers use: errors and clouds.
core=("$root/src/core/error.c" "$root/src/core/cloud.c")

declare -A enum=([ply]=PTREG_FORMAT_PLY [pcd]=PTREG_FORMAT_PCD [xyz]=PTREG_FORMAT_XYZ
                 [vtk]=PTREG_FORMAT_VTK [all]="")
declare -A exts=([ply]=ply [pcd]=pcd [xyz]="xyz txt csv pts" [vtk]=vtk
                 [all]="ply pcd xyz txt csv pts vtk")

seed() { # folder extensions...
    local dir=$1 ext f
    shift
    mkdir -p "$dir"
    for ext in "$@"; do
        for f in "$root"/tests/data/io/good/*."$ext" "$root"/tests/data/io/bad/*."$ext" \
                 "$root"/../shared/data/*/*."$ext"; do
            # Real files over 64 KB only slow the fuzzer down.
            if [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ]; then
                cp -n "$f" "$dir/"
            fi
        done
    done
}

fuzz_index() {
    local lib=$build/lib bin=$build/fuzz_index corpus=$build/corpus-index f
    cmake -S "$root" -B "$lib" -DCMAKE_BUILD_TYPE=Debug -DPTREG_CUDA=OFF -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_C_FLAGS="-O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
        >/dev/null
    cmake --build "$lib" -j "$(nproc)" --target ptreg_static ptreg_cli >/dev/null
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fopenmp \
        -I"$root/include" -I"$root/src" "$root/tests/fuzz/fuzz_index.c" "$lib/libptreg.a" \
        $(pkg-config --libs liblzf qhull_r) -lm -o "$bin"
    mkdir -p "$corpus" "$build/crash-index"
    "$lib/ptreg" synth --shape blob --model "$build/blob300.ply" --model-points 300 >/dev/null
    for f in "$build/blob300.ply" "$root"/tests/data/io/good/*.ply "$root"/tests/data/io/good/*.xyz; do
        [ -f "$f" ] && "$lib/ptreg" index "$f" -o "$corpus/$(basename "$f").pti" >/dev/null 2>&1 || true
        [ -f "$f" ] && "$lib/ptreg" index "$f" --leaf-size 4 -o "$corpus/$(basename "$f").4.pti" >/dev/null 2>&1 || true
    done
    echo "== index: ${seconds}s, corpus $(find "$corpus" -type f | wc -l) files"
    PTREG_NUM_THREADS=1 "$bin" -max_total_time="$seconds" -max_len=262144 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$build/crash-index/" "$corpus" \
        2>&1 | tee "$build/fuzz-index.log" | grep -E '^(#[0-9]+ +DONE|==[0-9]+==|stat::number_of_executed_units|SUMMARY)' || true
}

for fmt in "${formats[@]}"; do
    if [ "$fmt" = index ]; then
        fuzz_index
        continue
    fi
    [ -n "${exts[$fmt]+x}" ] || { echo "unknown format $fmt" >&2; exit 2; }
    bin=$build/fuzz_read_$fmt
    define=()
    [ -n "${enum[$fmt]}" ] && define=(-DFUZZ_FORMAT="${enum[$fmt]}")
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        "${define[@]}" -I"$root/include" -I"$root/src" $(pkg-config --cflags liblzf) \
        "$root"/tests/fuzz/fuzz_read.c "$root"/src/io/*.c "${core[@]}" \
        $(pkg-config --libs liblzf) -lm -o "$bin"
    corpus=$build/corpus-$fmt
    # shellcheck disable=SC2086
    seed "$corpus" ${exts[$fmt]}
    mkdir -p "$build/crash-$fmt"
    echo "== $fmt: ${seconds}s, corpus $(find "$corpus" -type f | wc -l) files"
    "$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -dict="$root/tests/fuzz/formats.dict" \
        -print_final_stats=1 -artifact_prefix="$build/crash-$fmt/" "$corpus" \
        2>&1 | tee "$build/fuzz-$fmt.log" | grep -E '^(#[0-9]+ +DONE|==[0-9]+==|stat::number_of_executed_units|SUMMARY)' || true
done
