#!/usr/bin/env bash
# Allocation-failure injection over every command (issue 20): in a build
# with -DPTREG_FAULT_INJECTION=ON (and the sanitizers), each command below
# first runs as is to count its allocations, then once per allocation n
# with the n-th made to fail. Each failing run must
#   - exit 4 with a message about memory that starts "ptreg COMMAND:" (or
#     "ptreg:" from the JSON printer),
#   - leave its output folder empty (no file, whole or partial),
#   - print nothing on stdout when --json was asked for,
#   - and draw no sanitizer report (a leak, a bad access, UB);
# or else exit 0 with every output file the same bits as without the
# failure: an allocation whose failure changes nothing (a buffer's shrink)
# is "absorbed", and the same stdout but for its times (same_stdout.py).
#
# A sweep that injects nothing passes whatever the code does, so the
# counting itself is checked: each run's count must be at least its floor
# (half its count when the floors were set; a command that now allocates
# much less lowers it), the sites file must hold one line per
# allocation counted, a second run without failures must print the same
# (but the tuner, whose winner follows its timings), every COMMAND named
# must be a sweep below, and the whole must have failed at least one
# allocation.
#
# Allocations made in a loop fail at the first two and the last turns of
# each loop only (the sites recorded by PTREG_ALLOC_SITES in the counting
# run: a hash of the call stack), which keeps the state each failure has
# to unwind (nothing yet, some, all but one) and drops the turns between,
# which unwind the same state as the second: PTREG_SWEEP_EVERY=1 fails every
# allocation.
#
# The tuner's path depends on its timings (which candidate wins decides
# what is measured next), so its runs differ in how many allocations they
# make: a tune run that ended before its n-th allocation had nothing
# injected and is counted as "not reached". In every other command the
# count is the same in every run, and a run that fell short is a problem.
#
#   tests/alloc/sweep.sh PTREG [COMMAND...]
#   tests/alloc/sweep.sh PTREG --except COMMAND...
#
# (CTest runs it as two tests, the longest runs and the rest, so that the
# two halves take the two cores of a CI machine.)
#
# A failure prints the run to repeat and the failing allocation's stack
# (PTREG_FAIL_TRACE=1). The counts and results are in tests/fuzz/README.md.
set -u
PTREG=$1
shift
except=0
if [ "${1:-}" = --except ]; then
    except=1
    shift
fi
only=("$@")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
IN=$WORK/in
OUT=$WORK/out
mkdir -p "$IN" "$OUT"
# One thread: the n-th allocation is then the same one in every run.
export PTREG_NUM_THREADS=1 PTREG_TUNE_CACHE=off
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=1
problems=0
total_runs=0
# the sweeps defined below, to check the names given against
declared=" "

make_inputs() {
    "$PTREG" synth --shape aircraft --model "$IN/model.ply" --model-points 1500 -o "$IN/scan.ply" --points 1000 \
        --max-angle 10 --noise 0.002 --seed 1 >/dev/null &&
        "$PTREG" normals "$IN/scan.ply" -o "$IN/scan_n.ply" >/dev/null &&
        "$PTREG" index "$IN/model.ply" -o "$IN/model.pti" >/dev/null &&
        "$PTREG" synth --lidar-sequence 4 --beams 8 --azimuth-step 2 --frames-dir "$IN/lidar" \
            --lidar-map "$IN/lidar_map.ply" >/dev/null &&
        "$PTREG" evaluate "$IN/scan.ply" "$IN/model.ply" --max-dist 0.05 --correspondences "$IN/pairs.txt" \
            >/dev/null &&
        "$PTREG" synth --shape apt-polycrystal -o "$IN/al.pos" --grains 2 --box 3 --seed 2 >/dev/null &&
        printf '[Ions]\nNumber=1\nIon1=Al\n[Ranges]\nNumber=1\nRange1=0 100 Vol:0.01 Al:1 Color:FF0000\n' \
            >"$IN/al.rrng" &&
        python3 "$(dirname "$0")/../cli/small_inputs.py" "$IN" &&
        python3 - "$IN" <<'PY' &&
import math, sys
# eval's pair: a winding true path and an estimate off it by up to 1 cm, 3 ms late
with open(sys.argv[1] + "/truth.txt", "w") as t, open(sys.argv[1] + "/est.txt", "w") as e:
    for i in range(40):
        p = (3 * math.cos(i / 5), 2 * math.sin(i / 4), 0.1 * i)
        q = "0 0 %.9g %.9g" % (math.sin(i / 20), math.cos(i / 20))
        t.write("%.6f %.9g %.9g %.9g %s\n" % (0.1 * i, p[0], p[1], p[2], q))
        e.write("%.6f %.9g %.9g %.9g %s\n" % (0.1 * i + 0.003, p[0] + 0.01 * math.sin(i + 1), p[1], p[2], q))
PY
    "$PTREG" lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 5 -o "$IN/r.vtk" >/dev/null &&
        PTREG_TUNE_CACHE="$IN/tune.json" "$PTREG" tune --size 1000 --sample 0.03 --reps 1 >/dev/null 2>&1 &&
        python3 - "$IN/tune.json" <<'PY'
import json, sys
# a winner other than the defaults, whatever the search found: a lookup
# that failed and ran the defaults must then show in the output's bits
with open(sys.argv[1]) as f:
    cache = json.load(f)
for kernels in cache["machines"].values():
    for entry in kernels["pair"].values():
        entry["params"].update(col_tile=256, row_block=256, row_vectors=1)
with open(sys.argv[1], "w") as f:
    json.dump(cache, f)
PY
}

# The same files, bit for bit; reports (.html) but for their run's numbers
# (times), which differ between any two runs.
same_outputs() {
    diff -r -x '*.html' "$1" "$2" >/dev/null && python3 "$(dirname "$0")/same_pages.py" "$1" "$2"
}

# same_stdout REF RUN: silent when the two printed the same but for times,
# else the first difference.
same_stdout() {
    python3 "$(dirname "$0")/same_stdout.py" "$1" "$2"
}

# count_of FILE: the count a run wrote, or nothing when it wrote none or
# not a number (a broken counter must not read as 0 allocations).
count_of() {
    local c
    c=$(cat "$1" 2>/dev/null) || return
    [[ $c =~ ^[0-9]+$ ]] && echo "$c"
}

problem() {
    echo "FAIL: $*" >&2
    problems=$((problems + 1))
}

# One failing run's checks: sweep name, command, n, whether --json was
# given, whether the run is timed, the exit code. Returns 0 when the
# failure was handled, 2 when it was absorbed, 3 when a timed run never
# reached allocation n, 1 (after saying why) otherwise.
check_failed_run() {
    local name=$1 command=$2 n=$3 json=$4 timed=$5 rc=$6
    local why="" made difference
    made=$(count_of "$WORK/count_n")
    if grep -qE 'Sanitizer|runtime error' "$WORK/err"; then
        why="a sanitizer report"
    elif { [ "$rc" -eq 0 ] || [ "$rc" -eq 4 ]; } && [ -z "$made" ]; then
        why="exit $rc with no allocation count written"
    elif [ "$rc" -eq 0 ] && [ "$made" -lt "$n" ]; then
        [ "$timed" = 1 ] && return 3
        why="exit 0 after $made allocations: the run never reached allocation $n"
    elif [ "$rc" -eq 4 ] && [ "$made" -lt "$n" ]; then
        why="exit 4 after $made allocations: allocation $n, never made, cannot have failed it"
    elif [ "$rc" -eq 0 ]; then
        if ! same_outputs "$WORK/ref" "$OUT"; then
            why="exit 0 with other outputs than without the failure"
        elif ! difference=$(same_stdout "$WORK/ref_stdout" "$WORK/stdout"); then
            why="exit 0 with another stdout than without the failure: $difference"
        else
            return 2
        fi
    elif [ "$rc" -ne 4 ]; then
        why="exit $rc, not 4"
    elif ! grep -qE "^ptreg( $command)?: " "$WORK/err" || ! grep -qiE 'memory' "$WORK/err"; then
        why="no message about memory"
    elif [ -n "$(ls -A "$OUT")" ]; then
        why="output left: $(find "$OUT" -mindepth 1 -maxdepth 1 -printf '%f ')"
    elif [ "$json" = 1 ] && [ -s "$WORK/stdout" ]; then
        why="partial JSON on stdout"
    fi
    [ -z "$why" ] && return 0
    problem "$name, allocation $n: $why"
    sed 's/^/  stderr: /' "$WORK/err" | head -8 >&2
    return 1
}

# allocations_to_fail COUNT: the numbers to fail, in order: every one under
# PTREG_SWEEP_EVERY=1, else each site's first, second and last.
allocations_to_fail() {
    if [ "${PTREG_SWEEP_EVERY:-0}" = 1 ]; then
        seq 1 "$1"
        return
    fi
    # nan-ok: counts of a site's allocations, whole numbers awk made itself
    awk '{ seen[$2]++; if (seen[$2] <= 2) print $1; last[$2] = $1 }
         END { for (s in last) if (seen[s] > 2) print last[s] }' "$WORK/ref_sites" | sort -n
}

# counted_run: the command as is, counting its allocations and their sites;
# its count on stdout, nothing when it failed (after saying why).
counted_run() {
    rm -rf "$OUT" && mkdir -p "$OUT"
    rm -f "$WORK/count" "$WORK/sites"
    if ! PTREG_ALLOC_COUNT="$WORK/count" PTREG_ALLOC_SITES="$WORK/sites" "$PTREG" "$@" >"$WORK/stdout" \
        2>"$WORK/err"; then
        sed 's/^/  stderr: /' "$WORK/err" | head -5 >&2
        return 1
    fi
    count_of "$WORK/count" || true
}

# check_count NAME COUNT FLOOR: whether the counting run counted enough to
# sweep: a count at least the floor, and a site for each allocation (the
# sites choose the allocations to fail).
check_count() {
    local name=$1 count=$2 floor=$3 sites
    sites=$(wc -l <"$WORK/sites" 2>/dev/null || echo 0)
    if [ -z "$count" ]; then
        problem "$name: the run without failures wrote no allocation count (PTREG_ALLOC_COUNT)"
    elif [ "$count" -lt "$floor" ]; then
        problem "$name: $count allocations counted, below the floor of $floor: a broken counter, or lower the floor"
    elif [ "$sites" -ne "$count" ]; then
        problem "$name: $sites allocation sites recorded (PTREG_ALLOC_SITES) for $count allocations"
    else
        return 0
    fi
    return 1
}

# check_rerun NAME ARGS...: a second run without failures prints what the
# counting run printed ($WORK/ref_stdout) but for times; else the failing
# runs would be compared with a stdout that no run repeats. (Not its count,
# which may differ by one: cJSON's print buffer grows with the printed
# times' digits. Nor its outputs: an index file keeps its build's times, so
# an absorbed failure in `index` is a problem.)
check_rerun() {
    local name=$1 difference
    shift
    if ! counted_run "$@" >/dev/null; then
        problem "$name: a second run without failures failed"
    elif ! difference=$(same_stdout "$WORK/ref_stdout" "$WORK/stdout"); then
        problem "$name: a second run without failures printed another stdout (a time same_stdout.py misses?): \
$difference"
    else
        return 0
    fi
    return 1
}

# sweep NAME [timed] FLOOR -- COMMAND ARGS...: the whole sweep of one run.
# FLOOR: the fewest allocations the command can make (half its count when
# the floors were set). Outputs go under $OUT, which is emptied before each run.
sweep() {
    local name=$1 timed=0
    shift
    [ "$1" = timed ] && timed=1 && shift
    local floor=$1
    declared+="$name "
    if ! [[ $floor =~ ^[0-9]+$ ]] || [ "${2:-}" != -- ]; then
        problem "$name: no floor (sweep NAME [timed] FLOOR -- COMMAND...)"
        return
    fi
    shift 2
    local listed=0
    [[ " ${only[*]} " == *" $name "* ]] && listed=1
    if [ ${#only[@]} -gt 0 ] && [ "$listed" -eq "$except" ]; then
        return
    fi
    local json=0 arg
    for arg in "$@"; do [ "$arg" = --json ] && json=1; done
    local count
    if ! count=$(counted_run "$@"); then
        problem "$name: the run without failures failed"
        return
    fi
    check_count "$name" "$count" "$floor" || return
    rm -rf "$WORK/ref" && cp -r "$OUT" "$WORK/ref" && cp "$WORK/stdout" "$WORK/ref_stdout" &&
        cp "$WORK/sites" "$WORK/ref_sites"
    # the tuner's count and winner follow its timings
    [ "$timed" = 1 ] || check_rerun "$name" "$@" || return
    local start=$SECONDS handled=0 absorbed=0 unreached=0 n rc verdict chosen
    chosen=$(allocations_to_fail "$count")
    for n in $chosen; do
        rm -rf "$OUT" && mkdir -p "$OUT"
        rm -f "$WORK/count_n"
        PTREG_FAIL_ALLOC=$n PTREG_ALLOC_COUNT="$WORK/count_n" timeout 120 "$PTREG" "$@" >"$WORK/stdout" \
            2>"$WORK/err"
        rc=$?
        check_failed_run "$name" "$1" "$n" "$json" "$timed" "$rc"
        verdict=$?
        if [ "$verdict" -eq 0 ]; then
            handled=$((handled + 1))
        elif [ "$verdict" -eq 2 ]; then
            absorbed=$((absorbed + 1))
        elif [ "$verdict" -eq 3 ]; then
            unreached=$((unreached + 1))
        else
            echo "  again: PTREG_FAIL_ALLOC=$n PTREG_FAIL_TRACE=1 PTREG_NUM_THREADS=1 $PTREG $*" >&2
            PTREG_FAIL_ALLOC=$n PTREG_FAIL_TRACE=1 timeout 120 "$PTREG" "$@" 2>&1 >/dev/null |
                grep -m 8 -E '^ +#[0-9]+ ' | sed 's/^/  /' >&2
        fi
    done
    local runs
    runs=$(echo "$chosen" | wc -w)
    [ "$runs" -gt 0 ] || problem "$name: no allocation chosen to fail of $count"
    total_runs=$((total_runs + runs))
    local tail=""
    [ "$timed" = 1 ] && tail=", $unreached not reached"
    printf '%-14s %5d allocations, %5d failed: %5d cleanly, %3d absorbed%s (%ds)\n' "$name" "$count" "$runs" \
        "$handled" "$absorbed" "$tail" $((SECONDS - start))
}

make_inputs || { echo "FAIL: could not make the inputs" >&2; exit 1; }

# NAME [timed] FLOOR -- COMMAND: each floor is half the allocations the
# command made when the floors were set (the counts of tests/fuzz/README.md's
# table; multiway 559): well below any run of the command, well above a
# counter that missed an allocator or a run that stopped early.

sweep synth 6 -- synth --shape aircraft --model "$OUT/m.ply" --model-points 300 -o "$OUT/s.ply" --points 200 \
    --truth-out "$OUT/t.txt" --seed 3
sweep synth-apt 7 -- synth --shape apt-polycrystal -o "$OUT/a.pos" --truth-out "$OUT/t.npy" --grains 2 --box 3 --seed 2
sweep convert 3 -- convert "$IN/scan.ply" -o "$OUT/c.pcd"
sweep convert-voxel 6 -- convert "$IN/scan.ply" --voxel 0.05 -o "$OUT/c.ply"
sweep filter 24 -- filter "$IN/scan.ply" --statistical 2 -o "$OUT/f.ply" --indices "$OUT/f.txt" --json
sweep filter-radius 11 -- filter "$IN/scan_n.ply" --radius 0.05 --min-neighbors 3 -o "$OUT/f.pcd"
sweep filter-random 4 -- filter "$IN/scan.ply" --random 0.5 -o "$OUT/f.xyz"
sweep evaluate 25 -- evaluate "$IN/scan.ply" "$IN/model.ply" --max-dist 0.05 --correspondences "$OUT/c.txt" \
    --json
sweep correspond 39 -- correspond "$IN/scan.ply" "$IN/model.ply" --pairs "$IN/pairs.txt" --ransac-dist 0.02 \
    -o "$OUT/r.ply" -t "$OUT/T.txt" --json
sweep info 14 -- info "$IN/model.pti" --json
sweep view 69 -- view "$IN/scan.ply" "$IN/model.ply" --distance -o "$OUT/v.html"
sweep icp 108 -- icp "$IN/scan.ply" "$IN/model.ply" -o "$OUT/r.ply" --transform-out "$OUT/T.txt" --repeat 2 --json
sweep icp-gicp-lm 29 -- icp "$IN/scan.ply" "$IN/model.ply" --method gicp --lm 1e-3 -o "$OUT/r.ply"
sweep icp-index 15 -- icp "$IN/scan.ply" --target-index "$IN/model.pti" --nn delaunay-kdann -o "$OUT/r.ply"
sweep register 367 -- register "$IN/scan.ply" "$IN/model.ply" -o "$OUT/r.ply" --json --html "$OUT/r.html"
sweep multiway 279 -- multiway "$IN/scan.ply" "$IN/model.ply" -o "$OUT/p.txt" --pose-graph-out "$OUT/g.json" \
    --merged "$OUT/m.ply" --json
sweep synth-lidar 25 -- synth --lidar-sequence 2 --beams 8 --azimuth-step 4 --frames-dir "$OUT/l" --json \
    --lidar-map "$OUT/map.ply" --truth-trajectory-out "$OUT/t.txt"
sweep odometry 128 -- odometry "$IN"/lidar/velodyne/*.bin -o "$OUT/o.txt" --map "$OUT/m.ply" --map-whole --json
sweep localize 574 -- localize "$IN/lidar_map.ply" "$IN"/lidar/velodyne/*.bin --init 0,0,0 --tile 10 -o "$OUT/o.txt" \
    --save-tiles "$OUT/m.ptm" --map "$OUT/s.ply" --json
sweep track 143 -- track "$IN/model.ply" "$IN/scan.ply" "$IN/scan_n.ply" -o "$OUT/t.txt" --json
sweep eval 715 -- eval "$IN/est.txt" "$IN/truth.txt" --kitti-lengths 1,2 --json --html "$OUT/e.html"
sweep emicp 22 -- emicp "$IN/scan.ply" "$IN/model.ply" -o "$OUT/r.ply" --plot "$OUT/p.svg"
sweep cpd 101 -- cpd "$IN/scan.ply" "$IN/model.ply" --transform similarity --max-iter 4 -o "$OUT/c.ply" \
    -t "$OUT/t.txt" --json
sweep cpd-deformable 584 -- cpd "$IN/scan.ply" "$IN/model.ply" --transform deformable --beta 0.5 --max-iter 2 \
    --warp "$IN/scan.ply" --warp-out "$OUT/w.ply" --plot "$OUT/p.svg"
# with a winner in the tuner's cache: the lookup's allocations too
PTREG_TUNE_CACHE="$IN/tune.json" sweep emicp-tuned 40 -- emicp "$IN/scan.ply" "$IN/model.ply" -o "$OUT/r.ply"
sweep emicp-fp16 81 -- emicp "$IN/scan.ply" "$IN/model.ply" --precision fp16 --json
sweep icp-plane 20 -- icp "$IN/scan.ply" "$IN/model.ply" --method plane --nn brute -t "$OUT/T.txt"
sweep normals 12 -- normals "$IN/scan.ply" -o "$OUT/n.ply"
sweep pfh 13 -- pfh "$IN/scan_n.ply" --k 10 -o "$OUT/p.npy"
sweep fpfh 53 -- fpfh "$IN/scan.ply" -o "$OUT/f.csv" --json
sweep harris3d 13 -- harris3d "$IN/box_24x24x24_uint8.raw" -o "$OUT/k.csv" --scores "$OUT/s.nrrd"
sweep harris3d-json 43 -- harris3d "$IN/box_24x24x24_uint8.raw" --reference --json
sweep lddmm 56 -- lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 5 -o "$OUT/r.vtk" \
    --moved "$OUT/m.ply" --json
sweep warp 10 -- warp "$IN/r.vtk" "$IN/ellipse16.csv" -o "$OUT/w.ply"
sweep index 39 -- index "$IN/model.ply" -o "$OUT/m.pti" --json
sweep batch-pairs 8 -- batch --pairs "$IN/two.ptpairs" -o "$OUT/o.npy" --device cpu
sweep batch-atoms 36 -- batch "$IN/al.pos" --ranges "$IN/al.rrng" --ion Al --radius 0.35 -o "$OUT/o.npy" \
    --assignment "$OUT/s.npy" --device cpu
sweep tune timed 207 -- tune --size 200 --search coordinate --sample 0.03 --reps 1 --csv "$OUT/t.csv"
sweep devices 55 -- devices --json
# The device paths through POCL (the CPU OpenCL driver): ptreg's own host
# allocations around the kernels (staging, results, the device layer's
# tables); POCL's are not counted.
sweep icp-opencl 49 -- icp "$IN/scan.ply" "$IN/model.ply" --device opencl -o "$OUT/r.ply"
sweep emicp-opencl 30 -- emicp "$IN/scan.ply" "$IN/model.ply" --device opencl -o "$OUT/r.ply"
sweep fpfh-opencl 36 -- fpfh "$IN/scan.ply" --device opencl -o "$OUT/f.csv"
sweep harris3d-opencl 21 -- harris3d "$IN/box_24x24x24_uint8.raw" --device opencl -o "$OUT/k.csv"
sweep lddmm-opencl 33 -- lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 5 --device opencl \
    -o "$OUT/r.vtk"
sweep batch-opencl 17 -- batch --pairs "$IN/two.ptpairs" -o "$OUT/o.npy" --device opencl

# a name given that is no sweep (a typo, a sweep renamed) would sweep nothing
for name in "${only[@]}"; do
    [[ $declared == *" $name "* ]] || problem "no sweep named '$name'"
done
[ "$total_runs" -gt 0 ] || problem "no allocation was failed"
echo "$total_runs runs with a failed allocation, $problems problems"
[ "$problems" -eq 0 ] || exit 1
echo ok
