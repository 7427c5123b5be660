#!/usr/bin/env bash
# Fuzzes the cloud readers, the volume readers and the model index loader
# with libFuzzer (clang, ASan, UBSan).
#
#   tests/fuzz/run.sh [SECONDS] [FORMAT...]     FORMAT: ply pcd xyz vtk mesh all las volume index lddmm batch tune
#                                                        transform options posegraph frames tiles
#
# "batch" drives fuzz_batch_inputs.c (.pos/.epos, .rrng/.rng, pairs files)
# from seeds it writes itself and the shared .pos file.
#
# "las" drives fuzz_las.c (the LAS reader with classes, a crop box and
# attributes by input length, and its header summary) from the seeds of
# tests/fuzz/seeds/las, which test_las writes (`test_las --seeds DIR`).
#
# "volume" drives fuzz_volume.c (NRRD, NIfTI-1, raw) from small NRRD/NIfTI
# seeds that it writes itself.
#
# "tune" fuzzes the tuner's cache (fuzz_tune_cache.c) against the same
# sanitized library, from caches `ptreg tune` writes.
#
# "transform" fuzzes the text files of transforms: one 4x4, many poses
# (multiway's -o and --truth) and index pairs (--pairs), by input length,
# and every input as a trajectory (TUM or KITTI: track's and eval's).
#
# "frames" fuzzes track's binary frame stream (fuzz_frames.c) from a few
# streams it writes itself: whole, cut short, and with a foreign magic.
#
# "posegraph" fuzzes Open3D's pose-graph JSON (fuzz_posegraph.c: the
# parser, then a few solver steps) built from the pose-graph sources and the
# parts of core and io they use, seeded with tests/data/posegraph/*.json.
#
# "options" fuzzes option values as text (fuzz_options.c: every row of the
# library's options tables) against that library too.
#
# "tiles" fuzzes the tiled map reader of ptreg localize (fuzz_tiles.c: the
# header, the tile table, every tile read) against the sanitized library,
# seeded with tiled maps that ptreg localize --save-tiles writes.
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
#
# A fuzzer that did not run finds nothing, so no new crash file is not
# enough: each target must exit 0 (libFuzzer's end of a timed run; a
# finding exits otherwise and leaves its input) having executed inputs
# (stat::number_of_executed_units in its log), and a target that cannot
# be built fails the run at once, named.
set -eEuo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
shift || true
formats=("$@")
[ ${#formats[@]} -eq 0 ] && formats=(ply pcd xyz vtk mesh all las volume index lddmm batch tune transform options posegraph
                                    frames tiles)
build=${FUZZ_BUILD:-$root/build-fuzz}
cc=${CC_FUZZ:-clang}
mkdir -p "$build"
export PTREG_NUM_THREADS=1
# what this run finds: artifacts newer than this mark fail it (exit 1)
mark=$build/.run-started
touch "$mark"
# the target being built, for the message when its build fails
building=""
# the targets started, in order, and their fuzzers' subshells
started=()
declare -A pid_of
build_failed() {
    echo "FAIL: fuzz $building: its build failed (exit $1); waiting for the fuzzers started" >&2
    trap - ERR
    wait
    exit 1
}
trap 'build_failed $?' ERR
# The parts of core the readers use: errors, clouds, volumes, the voxel
# grid (src/io/voxel_stream.c downsamples a file as it reads it) and the
# points' bounds (core/summary.c, which the grid takes); transform.c: the
# TUM trajectory reader turns quaternions into matrices; atomic.c: the
# writers' temporary-then-rename output, which io's files share.
core=("$root/src/core/error.c" "$root/src/core/cloud.c" "$root/src/core/volume.c" "$root/src/core/voxel.c"
      "$root/src/core/summary.c" "$root/src/core/transform.c" "$root/src/core/atomic.c")

declare -A enum=([ply]=PTREG_FORMAT_PLY [pcd]=PTREG_FORMAT_PCD [xyz]=PTREG_FORMAT_XYZ
                 [vtk]=PTREG_FORMAT_VTK [mesh]=MESHES [all]="")
declare -A exts=([ply]=ply [pcd]=pcd [xyz]="xyz txt csv pts" [vtk]=vtk [mesh]="obj stl off"
                 [all]="ply pcd xyz txt csv pts vtk las obj stl off")

seed() { # folder extensions...
    local dir=$1 ext f
    shift
    mkdir -p "$dir"
    for ext in "$@"; do
        for f in "$root"/tests/data/io/good/*."$ext" "$root"/tests/data/io/bad/*."$ext" \
                 "$root"/tests/fuzz/seeds/*/*."$ext" "$root"/../shared/data/*/*."$ext"; do
            # Real files over 64 KB only slow the fuzzer down.
            if [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65536 ]; then
                cp -n "$f" "$dir/"
            fi
        done
    done
}

# The whole library with the sanitizers, for the fuzzers that need more
# than the readers (in $build/lib).
sanitized_library() {
    local lib=$build/lib
    cmake -S "$root" -B "$lib" -DCMAKE_BUILD_TYPE=Debug -DPTREG_CUDA=OFF -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_C_FLAGS="-O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
        >/dev/null
    cmake --build "$lib" -j "$(nproc)" --target ptreg_static ptreg_cli >/dev/null
}

# The readers (src/io and the parts of core they use), compiled once for
# every reader fuzzer (with the fuzzers' instrumentation), in
# build-fuzz/readers/: each of the 11 compiled them again before.
reader_objects=()
build_reader_objects() {
    [ ${#reader_objects[@]} -eq 0 ] || return 0
    local dir=$build/readers src obj
    mkdir -p "$dir"
    for src in "$root"/src/io/*.c "${core[@]}"; do
        obj=$dir/$(basename "$(dirname "$src")")_$(basename "$src" .c).o
        # shellcheck disable=SC2046
        $cc -std=c11 -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
            -I"$root/include" -I"$root/src" $(pkg-config --cflags liblzf libcjson) -c "$src" -o "$obj"
        reader_objects+=("$obj")
    done
}

# Builds a fuzzer over the readers alone: name, its source, extra compiler
# flags (for its source: the readers take none).
build_reader_fuzzer() {
    local name=$1 source=$2
    shift 2
    build_reader_objects
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined "$@" \
        -I"$root/include" -I"$root/src" $(pkg-config --cflags liblzf libcjson) "$source" "${reader_objects[@]}" \
        $(pkg-config --libs liblzf zlib libcjson) -lm -o "$build/fuzz_$name"
}

# Runs fuzzer `bin` on its corpus for the run's seconds: name, bin, corpus,
# the longest input, then any other libFuzzer flags. Its log goes to
# build-fuzz/fuzz-NAME.log, what it finds to build-fuzz/crash-NAME/; its
# job ends with its exit status.
# Each fuzzer is one process for a fixed time: they run side by side, one a
# core (FUZZ_JOBS), while the next is built, so the run takes the seconds
# times the formats over the cores; the findings are checked once all ended.
fuzz_jobs=${FUZZ_JOBS:-$(nproc)}
run_target() {
    local name=$1 bin=$2 corpus=$3 max_len=$4
    shift 4
    mkdir -p "$corpus" "$build/crash-$name"
    while [ "$(jobs -rp | wc -l)" -ge "$fuzz_jobs" ]; do
        wait -n || true # each job's status is taken by its name below
    done
    rm -f "$build/fuzz-$name.log"
    echo "== $name: ${seconds}s, corpus $(find "$corpus" -type f | wc -l) files"
    {
        trap - ERR
        set +e
        "$bin" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 "$@" \
            -print_final_stats=1 -artifact_prefix="$build/crash-$name/" "$corpus" 2>&1 |
            tee "$build/fuzz-$name.log" |
            grep -E '^(#[0-9]+[[:space:]]+DONE|==[0-9]+==|stat::number_of_executed_units|SUMMARY)' | sed "s/^/$name: /"
        exit "${PIPESTATUS[0]}"
    } &
    started+=("$name")
    pid_of[$name]=$!
}

# executed NAME: the inputs the target's fuzzer ran, from its final stats
# (or its "#N DONE" line); nothing when its log has neither.
executed() {
    local log=$build/fuzz-$1.log
    { sed -n 's/^stat::number_of_executed_units: *\([0-9][0-9]*\).*/\1/p' "$log" 2>/dev/null
      sed -n 's/^#\([0-9][0-9]*\)[[:space:]][[:space:]]*DONE.*/\1/p' "$log" 2>/dev/null; } | head -1
}

# check_target NAME RC: whether its fuzzer, which exited RC, ran and ended
# well; else says why. A finding is said here with its exit status and
# listed again below.
check_target() {
    local name=$1 rc=$2 units finding
    units=$(executed "$name")
    finding=$(find "$build/crash-$name" -type f -newer "$mark" 2>/dev/null | head -1)
    if [ "$rc" != 0 ] && [ -n "$finding" ]; then
        echo "FAIL: fuzz $name: a finding (exit $rc): $finding" >&2
    elif [ "$rc" != 0 ]; then
        echo "FAIL: fuzz $name: exit $rc without a finding (did not start?):" >&2
        tail -5 "$build/fuzz-$name.log" 2>/dev/null | sed 's/^/  /' >&2
    elif [ -z "$units" ] || [ "$units" -eq 0 ]; then
        echo "FAIL: fuzz $name: exit 0 but ${units:-no count of} inputs executed (log $build/fuzz-$name.log)" >&2
    else
        echo "fuzz $name: $units inputs, exit 0"
        return 0
    fi
    return 1
}

fuzz_transform() {
    local bin=$build/fuzz_transform corpus=$build/corpus-transform
    build_reader_fuzzer transform "$root/tests/fuzz/fuzz_transform.c"
    mkdir -p "$corpus"
    printf '1 0 0 0.5\n0 1 0 0\n0 0 1 -2 # shifted\n0 0 0 1\n' >"$corpus/four.txt"
    printf '0.9,0.1,0,1e-3,\n-0.1,0.9,0,0\n0,0,1,0\n' >"$corpus/twelve.csv"
    # lengths 2 and 1 mod 3 reach the poses and the pairs parsers
    printf '# pose 0\n1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n# pose 1: b\n0 -1 0 2\n1 0 0 0\n0 0 1 0\n0 0 0 1\n' \
        >"$corpus/poses.txt"
    printf '0 1\n1 2 # a chain\n2,0\n' >"$corpus/pairs.txt"
    # trajectories (every input is read as one too): TUM, and KITTI's 12 numbers a line
    printf '# t tx ty tz qx qy qz qw\n0.0 1 2 3 0 0 0 1\n0.1 1.5 2 3 0 0 0.0998 0.995\n' >"$corpus/trajectory.tum"
    printf '1 0 0 0 0 1 0 0 0 0 1 0\n9.999978e-01 5.272628e-04 -2.066935e-03 -4.690294e-02 -5.296506e-04 9.999992e-01 -1.154865e-03 -2.839928e-02 2.066324e-03 1.155958e-03 9.999971e-01 8.586941e-01\n' \
        >"$corpus/kitti.txt"
    # correspondences with weights (ptreg correspond --pairs), also 1 mod 3
    printf '0 1 0.5\n2 3 1.5\n4,5,0\n' >"$corpus/correspondences.txt"
    run_target transform "$bin" "$corpus" 4096
}

fuzz_frames() {
    local bin=$build/fuzz_frames corpus=$build/corpus-frames
    build_reader_fuzzer frames "$root/tests/fuzz/fuzz_frames.c"
    mkdir -p "$corpus"
    # two frames (1 point, then none), the same cut in its points, a foreign magic
    printf 'PTF1\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\xe0\x3f\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40PTF1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\xf0\x3f' \
        >"$corpus/two.ptf"
    head -c 26 "$corpus/two.ptf" >"$corpus/cut.ptf"
    printf 'PLY1 not a stream at all' >"$corpus/foreign.ptf"
    run_target frames "$bin" "$corpus" 4096
}

fuzz_posegraph() {
    local bin=$build/fuzz_posegraph corpus=$build/corpus-posegraph f
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$root/include" -I"$root/src" $(pkg-config --cflags libcjson) -I/usr/include/suitesparse \
        "$root/tests/fuzz/fuzz_posegraph.c" "$root"/src/reg/posegraph/posegraph.c \
        "$root"/src/reg/posegraph/posegraph_json.c "$root"/src/reg/posegraph/posegraph_lm.c \
        "$root/src/core/error.c" "$root/src/core/transform.c" "$root/src/core/rng.c" "$root/src/core/atomic.c" \
        "$root/src/core/options.c" $(pkg-config --libs libcjson) -lcholmod -lm -lpthread -o "$bin"
    mkdir -p "$corpus"
    for f in "$root"/tests/data/posegraph/*.json; do
        cp -n "$f" "$corpus/"
    done
    run_target posegraph "$bin" "$corpus" 65536
}

fuzz_tune() {
    local lib=$build/lib bin=$build/fuzz_tune corpus=$build/corpus-tune
    sanitized_library
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fopenmp \
        -I"$root/include" -I"$root/src" "$root/tests/fuzz/fuzz_tune_cache.c" \
        "$lib/libptreg.a" $(pkg-config --libs liblzf qhull_r libcjson zlib liblbfgs) -ldl -lm -o "$bin"
    mkdir -p "$corpus"
    PTREG_TUNE_CACHE="$corpus/tuned.json" "$lib/ptreg" tune --size 200 --search coordinate --sample 0.03 \
        --reps 1 >/dev/null 2>&1 || true
    printf '{"format": 1, "machines": {"cpu: fuzz": {"pair": {"1e8": {"params": {"threads": 2, "col_tile": 512}, "ptreg": "%s"}}}}}' \
        "$("$lib/ptreg" --version | cut -d' ' -f2)" >"$corpus/fuzz_machine.json"
    run_target tune "$bin" "$corpus" 16384
}

fuzz_options() {
    local lib=$build/lib bin=$build/fuzz_options corpus=$build/corpus-options
    sanitized_library
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fopenmp \
        -I"$root/include" -I"$root/src" "$root/tests/fuzz/fuzz_options.c" "$lib/libptreg.a" \
        $(pkg-config --libs liblzf qhull_r libcjson zlib liblbfgs) -ldl -lm -o "$bin"
    mkdir -p "$corpus"
    /usr/bin/python3 -c '
import os, sys
for row in range(0, 256, 5):  # the first byte picks the table and the row
    for name, value in (("half", b"0.5"), ("name", b"fp16"), ("big", b"1e308"), ("int", b"12"), ("neg", b"-3")):
        open(os.path.join(sys.argv[1], "%d-%s" % (row, name)), "wb").write(bytes([row]) + value)' "$corpus"
    run_target options "$bin" "$corpus" 256
}

fuzz_tiles() {
    local lib=$build/lib bin=$build/fuzz_tiles corpus=$build/corpus-tiles seeds=$build/seeds-tiles tile
    sanitized_library
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fopenmp \
        -I"$root/include" -I"$root/src" "$root/tests/fuzz/fuzz_tiles.c" "$lib/libptreg.a" \
        $(pkg-config --libs liblzf qhull_r libcjson zlib liblbfgs) -ldl -lm -o "$bin"
    mkdir -p "$corpus" "$seeds"
    "$lib/ptreg" synth --lidar-sequence 2 --beams 4 --azimuth-step 6 --frames-dir "$seeds/drive" \
        --lidar-map "$seeds/map.ply" >/dev/null
    for tile in 5 20; do
        "$lib/ptreg" localize "$seeds/map.ply" --frames "$seeds/drive/velodyne" --init 0,0,0 --tile $tile \
            --voxel 0.5 --save-tiles "$corpus/map$tile.ptm" -o /dev/null -q >/dev/null 2>&1 || true
    done
    run_target tiles "$bin" "$corpus" 65536
}

fuzz_index() {
    local lib=$build/lib bin=$build/fuzz_index corpus=$build/corpus-index f
    sanitized_library
    # shellcheck disable=SC2046
    $cc -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fopenmp \
        -I"$root/include" -I"$root/src" "$root/tests/fuzz/fuzz_index.c" "$lib/libptreg.a" \
        $(pkg-config --libs liblzf qhull_r libcjson) -lm -o "$bin"
    mkdir -p "$corpus"
    "$lib/ptreg" synth --shape blob --model "$build/blob300.ply" --model-points 300 >/dev/null
    for f in "$build/blob300.ply" "$root"/tests/data/io/good/*.ply "$root"/tests/data/io/good/*.xyz; do
        # a cloud that makes no index (too few points) is no seed
        if [ -f "$f" ]; then
            "$lib/ptreg" index "$f" -o "$corpus/$(basename "$f").pti" >/dev/null 2>&1 || true
            "$lib/ptreg" index "$f" --leaf-size 4 -o "$corpus/$(basename "$f").4.pti" >/dev/null 2>&1 || true
        fi
    done
    run_target index "$bin" "$corpus" 262144
}

fuzz_las() {
    local bin=$build/fuzz_las corpus=$build/corpus-las f
    build_reader_fuzzer las "$root/tests/fuzz/fuzz_las.c"
    mkdir -p "$corpus"
    for f in "$root"/tests/fuzz/seeds/las/*.las; do
        cp -n "$f" "$corpus/"
    done
    run_target las "$bin" "$corpus" 4096 -dict="$root/tests/fuzz/formats.dict"
}

fuzz_volume() {
    local bin=$build/fuzz_volume corpus=$build/corpus-volume
    build_reader_fuzzer volume "$root/tests/fuzz/fuzz_volume.c"
    mkdir -p "$corpus"
    printf 'NRRD0004\ntype: short\ndimension: 3\nsizes: 2 2 2\nendian: big\nencoding: raw\n\n0123456789abcdef' \
        >"$corpus/raw.nrrd"
    printf 'NRRD0005\ntype: float\ndimension: 2\nsizes: 2 2\nspacings: 1 2\nencoding: ascii\n\n1 2\n3 4\n' \
        >"$corpus/ascii.nrrd"
    { printf 'NRRD0004\ntype: uchar\ndimension: 3\nsizes: 4 4 4\nencoding: gzip\n\n'; head -c 64 /dev/zero | gzip -c; } \
        >"$corpus/gzip.nrrd"
    /usr/bin/python3 -c '
import struct, sys
h = bytearray(352); struct.pack_into("<i", h, 0, 348); struct.pack_into("<8h", h, 40, 3, 2, 2, 2, 1, 1, 1, 1)
struct.pack_into("<hh", h, 70, 2, 8); struct.pack_into("<f", h, 108, 352.0); h[344:348] = b"n+1\0"
sys.stdout.buffer.write(bytes(h) + bytes(range(8)))' >"$corpus/small.nii"
    gzip -c "$corpus/small.nii" >"$corpus/small.nii.gz"
    run_target volume "$bin" "$corpus" 65536
}

fuzz_lddmm() {
    local bin=$build/fuzz_lddmm corpus=$build/corpus-lddmm
    build_reader_fuzzer lddmm "$root/tests/fuzz/fuzz_lddmm.c"
    mkdir -p "$corpus"
    printf '# vtk DataFile Version 3.0\nr\nASCII\nDATASET POLYDATA\nFIELD FieldData 3\nsigma 1 1 double\n0.5\ntime_points 1 1 int\n5\nintegrator 1 1 int\n1\nPOINTS 2 double\n0 0 0 1 0 0\nPOINT_DATA 2\nVECTORS InitialMomentum double\n0 1 0 0 -1 0\n' \
        >"$corpus/result.vtk"
    printf '# ptreg lddmm sigma 0.5 time_points 5 integrator euler\nx,y,z,px,py,pz\n0,0,0,0,1,0\n1,0,0,0,-1,0\n' \
        >"$corpus/result.csv"
    printf '"Filename"\t"Sx"\t"Sy"\t"Sz"\t"Tx"\t"Ty"\t"Tz"\n"a"\t1\t2\t3\t4\t5\t6\n"b"\t1\t2\t3.5\t4\t5\t-6\n' \
        >"$corpus/table.tsv"
    run_target lddmm "$bin" "$corpus" 65536
}

fuzz_batch() {
    local bin=$build/fuzz_batch corpus=$build/corpus-batch f
    build_reader_fuzzer batch "$root/tests/fuzz/fuzz_batch_inputs.c"
    mkdir -p "$corpus"
    printf '[Ions]\nNumber=2\nIon1=Al\nIon2=O\n[Ranges]\nNumber=2\nRange1=26.8 27.2 Vol:0.01661 Al:1 Color:FF0000\nRange2=43.0 43.4 Al:1 O:1\n' \
        >"$corpus/a.rrng"
    printf '2 2\nAl\nAl 1 0 0\nO\nO 0 1 0\n------- Al O\n. 26.8 27.2 1 0\n. 15.9 16.1 0 1\n' >"$corpus/a.rng"
    /usr/bin/python3 -c '
import struct, sys
head = b"PTPAIRS1" + struct.pack("<7Q", 2, 1, 0, 2, 3, 0, 2)
sys.stdout.buffer.write(head + struct.pack("<15f", *range(15)))' >"$corpus/two.ptpairs"
    f=$root/../shared/data/apt/cubicTestSmall.pos
    [ -f "$f" ] && head -c 4096 "$f" >"$corpus/cubic.pos"
    run_target batch "$bin" "$corpus" 65536
}

for fmt in "${formats[@]}"; do
    building=$fmt
    if [ "$fmt" = tune ]; then
        fuzz_tune
        continue
    fi
    if [ "$fmt" = options ]; then
        fuzz_options
        continue
    fi
    if [ "$fmt" = posegraph ]; then
        fuzz_posegraph
        continue
    fi
    if [ "$fmt" = transform ]; then
        fuzz_transform
        continue
    fi
    if [ "$fmt" = frames ]; then
        fuzz_frames
        continue
    fi
    if [ "$fmt" = batch ]; then
        fuzz_batch
        continue
    fi
    if [ "$fmt" = lddmm ]; then
        fuzz_lddmm
        continue
    fi
    if [ "$fmt" = index ]; then
        fuzz_index
        continue
    fi
    if [ "$fmt" = tiles ]; then
        fuzz_tiles
        continue
    fi
    if [ "$fmt" = las ]; then
        fuzz_las
        continue
    fi
    if [ "$fmt" = volume ]; then
        fuzz_volume
        continue
    fi
    [ -n "${exts[$fmt]+x}" ] || { echo "unknown format $fmt" >&2; exit 2; }
    bin=$build/fuzz_read_$fmt
    define=()
    [ -n "${enum[$fmt]}" ] && define=(-DFUZZ_FORMAT="${enum[$fmt]}")
    [ "${enum[$fmt]}" = MESHES ] && define=(-DFUZZ_MESHES=1)
    build_reader_fuzzer "read_$fmt" "$root/tests/fuzz/fuzz_read.c" "${define[@]}"
    corpus=$build/corpus-$fmt
    # shellcheck disable=SC2086
    seed "$corpus" ${exts[$fmt]}
    run_target "$fmt" "$bin" "$corpus" 65536 -dict="$root/tests/fuzz/formats.dict"
done

# the builds are over: from here a status is looked at, not a failure
trap - ERR
set +e
failed=0
for name in "${started[@]}"; do
    wait "${pid_of[$name]}"
    check_target "$name" $? || failed=1
done
found=$(find "$build" -path "$build/crash-*" -type f -newer "$mark" | sort)
if [ -n "$found" ]; then
    echo "fuzz: findings (add each to tests/data/io/bad/ once fixed):" >&2
    echo "$found" >&2
    exit 1
fi
[ "$failed" -eq 0 ] || exit 1
[ ${#started[@]} -gt 0 ] || { echo "FAIL: fuzz: no target run" >&2; exit 1; }
