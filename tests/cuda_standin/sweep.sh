#!/usr/bin/env bash
# Fault injection over ptreg's CUDA paths, through the driver stand-in
# (README.md; the host allocation sweep is tests/alloc/sweep.sh). Each
# command below, on --device cuda:0, first runs as is with
# CUDA_STANDIN_COUNTS to count its device allocations, copies (memsets
# included) and launches; then, for each kind of failure (alloc, copy,
# launch, and fault: the N-th launch faults, seen at the next
# synchronisation), it runs again with CUDA_STANDIN_FAIL=KIND:N, for every
# N when the command makes at most SWEEP_SAMPLE (8) calls of that kind,
# else for a spread: the first 4, the last 4 and the rest evenly between.
# Each failing run must
#   - exit 4,
#   - say on stderr "ptreg COMMAND: cuda:0 ..." with the step that failed:
#     the CUDA call (cuMemAlloc or "device memory", cuMemcpy/cuMemset,
#     cuLaunchKernel or cuGraphLaunch) or "kernel fault",
#   - leave its output folder empty and, with --json, print nothing on stdout,
#   - and end without a stand-in violation (a leaked allocation, module,
#     stream or event; exit 86 and "VIOLATION" on stderr).
# A run that exits 0 is "not reached" when its own count of that kind is
# below N (the call was never made), and must then print what the run
# without failures printed, but for times (../alloc/same_stdout.py); else
# it is a problem.
#
# A sweep that injects nothing passes whatever the code does, so the
# counts themselves are checked: the run without failures must write its
# counts file, each kind's count at least its floor (half its count when
# the floors were set, at least 1: every command allocates, copies and
# launches on the device), a second run without failures must count the
# same and print the same, every COMMAND named must be a sweep below, and
# the whole must have injected at least one failure.
#
#   tests/cuda_standin/sweep.sh PTREG WORK_DIR [COMMAND...]
#
# PTREG's folder must hold cuda_standin/ (exit 77 without it). WORK_DIR
# keeps the inputs and, for each problem, its run (the command to repeat is
# printed). SWEEP_JOBS runs at once (default: the cores).
set -u
if [ $# -lt 2 ]; then
    sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
PTREG=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
WORK=$2
shift 2
only=("$@")
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(dirname "$PTREG")
if [ ! -e "$bin/cuda_standin/libcuda.so.1" ] || [ ! -e "$bin/cuda_standin/libnvrtc-standin.so" ]; then
    echo "skip: no CUDA stand-in in $bin/cuda_standin"
    exit 77
fi
SI=$root/scripts/with-cuda-standin.sh
export PTREG_BUILD=$bin PTREG_TUNE_CACHE=off
# One host thread: the N-th call is the same one in every run; and the
# asynchronous copies' host sources checked when the stream reaches them.
export PTREG_NUM_THREADS=1 CUDA_STANDIN_STRICT=1
unset CUDA_STANDIN_FAIL CUDA_STANDIN_COUNTS CUDA_STANDIN_DRIVER_VERSION CUDA_STANDIN_STRICT_EXIT CUDA_STANDIN_QUIET \
    PTREG_DEVICE PTREG_DEVICE_CHECKED PTREG_CUDA_STANDIN_AUTO
JOBS=${SWEEP_JOBS:-$(nproc 2>/dev/null || echo 2)}
SAMPLE=${SWEEP_SAMPLE:-8}
KINDS="alloc copy launch fault"
IN=$WORK/in
RUNS=$WORK/runs
mkdir -p "$IN" || exit 1
rm -rf "$RUNS" && mkdir -p "$RUNS" || exit 1
problems=0
total_runs=0
# the sweeps defined below, to check the names given against
declared=" "

make_inputs() {
    "$SI" "$PTREG" synth --shape aircraft --model "$IN/model.ply" --model-points 1200 -o "$IN/scan.ply" \
        --points 800 --max-angle 10 --noise 0.002 --seed 1 >/dev/null &&
        "$SI" "$PTREG" normals "$IN/scan.ply" -o "$IN/scan_n.ply" >/dev/null &&
        "$SI" "$PTREG" index "$IN/model.ply" -o "$IN/model.pti" >/dev/null &&
        python3 "$root/tests/cli/small_inputs.py" "$IN" &&
        "$SI" "$PTREG" lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 5 -o "$IN/r.vtk" \
            >/dev/null &&
        "$SI" "$PTREG" synth --shape apt-polycrystal -o "$IN/al.pos" --grains 2 --box 2 --seed 2 >/dev/null
}

problem() {
    echo "FAIL: $*" >&2
    problems=$((problems + 1))
}

# run_one DIR FAIL ARGS...: ptreg ARGS under the stand-in, with
# CUDA_STANDIN_FAIL=FAIL unless FAIL is "-"; @OUT@ in ARGS is DIR/out. Leaves
# DIR/{out/,stdout,err,counts,rc}.
run_one() {
    local dir=$1 spec=$2 a
    shift 2
    local args=()
    for a in "$@"; do args+=("${a//@OUT@/$dir/out}"); done
    mkdir -p "$dir/out"
    if [ "$spec" = - ]; then
        CUDA_STANDIN_COUNTS=$dir/counts timeout 120 "$SI" "$PTREG" "${args[@]}" >"$dir/stdout" 2>"$dir/err"
    else
        CUDA_STANDIN_FAIL=$spec CUDA_STANDIN_COUNTS=$dir/counts timeout 120 "$SI" "$PTREG" "${args[@]}" \
            >"$dir/stdout" 2>"$dir/err"
    fi
    echo $? >"$dir/rc"
}

# calls KIND FILE: that kind's count in a counts file (fault: the launches);
# nothing when the file or its line is missing (not 0: a missing file would
# sweep nothing).
calls() {
    local kind=$1
    [ "$kind" = fault ] && kind=launch
    awk -v k="$kind" '$1 == k && $2 ~ /^[0-9]+$/ {print $2; exit}' "$2" 2>/dev/null
}

# picks COUNT: the Ns to inject, every one up to SAMPLE, else a spread
picks() {
    local c=$1 i mid=$((SAMPLE - 8))
    if [ "$c" -le "$SAMPLE" ]; then
        [ "$c" -gt 0 ] && seq 1 "$c"
        return
    fi
    {
        seq 1 4
        seq $((c - 3)) "$c"
        for ((i = 1; i <= mid; i++)); do echo $((4 + i * (c - 8) / (mid + 1))); done
    } | sort -nu
}

# The failed step, as ptreg's message must name it.
step_pattern() {
    case $1 in
    alloc) echo 'cuMemAlloc|device memory' ;;
    copy) echo 'cuMem(cpy|set)' ;;
    launch) echo 'cuLaunchKernel|cuGraphLaunch' ;;
    fault) echo 'kernel fault' ;;
    esac
}

# same_stdout REF_DIR DIR: whether run DIR printed what run REF_DIR did,
# but for times and the runs' own folders; else the first difference.
same_stdout() {
    python3 "$root/tests/alloc/same_stdout.py" "$1/stdout" "$2/stdout" "$1/out" "$2/out"
}

# check DIR KIND N JSON REF_DIR: prints "ok", "unreached" or the problem.
check() {
    local dir=$1 kind=$2 n=$3 json=$4 ref=$5 rc made difference
    rc=$(cat "$dir/rc" 2>/dev/null || echo none)
    made=$(calls "$kind" "$dir/counts")
    if [ "$rc" = 86 ] || grep -q "VIOLATION" "$dir/err"; then
        echo "a stand-in violation (exit $rc): $(grep -m 1 "VIOLATION" "$dir/err" | sed 's/^cuda-standin: //')"
    elif [ "$rc" = 0 ] && [ -z "$made" ]; then
        echo "exit 0 with no counts written: whether $kind #$n was reached is unknown"
    elif [ "$rc" = 0 ] && [ "$made" -lt "$n" ]; then
        if difference=$(same_stdout "$ref" "$dir"); then
            echo unreached
        else
            echo "not reached ($made made), yet another stdout than without failures: $difference"
        fi
    elif [ "$rc" = 0 ]; then
        echo "exit 0 though $kind #$n was injected ($made made)"
    elif [ "$rc" = 124 ]; then
        echo "timed out"
    elif [ "$rc" != 4 ]; then
        echo "exit $rc, not 4"
    elif ! grep -q "injected failure: $kind #$n\$" "$dir/err"; then
        echo "exit 4, but the stand-in injected nothing"
    elif ! grep -qE "^ptreg [a-z0-9]+: (.* )?cuda:0" "$dir/err"; then
        echo "no message 'ptreg COMMAND: ... cuda:0'"
    elif ! grep -E "^ptreg [a-z0-9]+: (.* )?cuda:0" "$dir/err" | grep -qE "$(step_pattern "$kind")"; then
        echo "the message does not name the failed step ($(step_pattern "$kind"))"
    elif [ -n "$(ls -A "$dir/out")" ]; then
        echo "output left: $(find "$dir/out" -mindepth 1 -maxdepth 1 -printf '%f ')"
    elif [ "$json" = 1 ] && [ -s "$dir/stdout" ]; then
        echo "partial JSON on stdout"
    else
        echo ok
    fi
}

# check_counts NAME FLOORS: whether the run without failures counted
# enough to sweep: each of alloc, copy and launch at least its floor
# (FLOORS: "A,C,L").
check_counts() {
    local name=$1 counts=$RUNS/$1/count/counts kind floor n i=0
    local -a floor_of
    IFS=, read -ra floor_of <<<"$2"
    if [ ! -s "$counts" ]; then
        problem "$name: the run without failures wrote no counts (CUDA_STANDIN_COUNTS)"
        return 1
    fi
    for kind in alloc copy launch; do
        floor=${floor_of[i]:-1} i=$((i + 1))
        n=$(calls "$kind" "$counts")
        if [ -z "$n" ] || [ "$n" -lt "$floor" ]; then
            problem "$name: ${n:-no} $kind calls counted, below the floor of $floor: a broken count, or lower the floor"
            return 1
        fi
    done
}

# check_rerun NAME ARGS...: a second run without failures counts the same
# and prints the same but for times; else a run not reached would be
# compared with a stdout that no run repeats.
check_rerun() {
    local name=$1 base=$RUNS/$1 difference
    shift
    run_one "$base/again" - "$@"
    if [ "$(cat "$base/again/rc")" != 0 ]; then
        problem "$name: a second run without failures failed (exit $(cat "$base/again/rc"))"
    elif ! cmp -s "$base/count/counts" "$base/again/counts"; then
        problem "$name: a second run without failures counted other calls: $(tr '\n' ' ' <"$base/again/counts")"
    elif ! difference=$(same_stdout "$base/count" "$base/again"); then
        problem "$name: a second run without failures printed another stdout (a time same_stdout.py misses?): \
$difference"
    else
        rm -rf "${base:?}/again"
        return 0
    fi
    return 1
}

# sweep NAME FLOORS ARGS...: count, then every kind's failures, then the
# table rows. FLOORS: the fewest allocations, copies and launches the
# command can make, "A,C,L".
sweep() {
    local name=$1 floors=$2
    shift 2
    declared+="$name "
    if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " == *" $name "* ]]; then
        return
    fi
    if ! [[ $floors =~ ^[0-9]+,[0-9]+,[0-9]+$ ]]; then
        problem "$name: no floors (sweep NAME ALLOCS,COPIES,LAUNCHES COMMAND...)"
        return
    fi
    local json=0 a start=$SECONDS
    for a in "$@"; do [ "$a" = --json ] && json=1; done
    local base=$RUNS/$name
    run_one "$base/count" - "$@"
    local rc
    rc=$(cat "$base/count/rc")
    if [ "$rc" != 0 ] || [ -z "$(ls -A "$base/count/out")" ] || grep -q "VIOLATION" "$base/count/err"; then
        problem "$name: the run without failures failed (exit $rc) or wrote nothing"
        sed 's/^/  stderr: /' "$base/count/err" | head -5 >&2
        return
    fi
    check_counts "$name" "$floors" || return
    check_rerun "$name" "$@" || return
    local kind n
    local -A count
    for kind in $KINDS; do
        count[$kind]=$(calls "$kind" "$base/count/counts")
        for n in $(picks "${count[$kind]}"); do
            run_one "$base/$kind-$n" "$kind:$n" "$@" &
            while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
        done
    done
    wait
    local runs passed unreached bad verdict all_runs=0 all_passed=0 all_unreached=0 all_bad=0
    for kind in $KINDS; do
        runs=0 passed=0 unreached=0 bad=0
        for n in $(picks "${count[$kind]}"); do
            runs=$((runs + 1))
            verdict=$(check "$base/$kind-$n" "$kind" "$n" "$json" "$base/count")
            case $verdict in
            ok) passed=$((passed + 1)) && rm -rf "${base:?}/$kind-$n" ;;
            unreached) unreached=$((unreached + 1)) && rm -rf "${base:?}/$kind-$n" ;;
            *)
                bad=$((bad + 1))
                problem "$name, $kind #$n: $verdict"
                grep -v "^cuda-standin: injected" "$base/$kind-$n/err" | head -6 | sed 's/^/  stderr: /' >&2
                echo "  again: CUDA_STANDIN_FAIL=$kind:$n PTREG_NUM_THREADS=1 PTREG_BUILD=$bin $SI $PTREG $*" |
                    sed "s|@OUT@|$base/$kind-$n/out|g" >&2
                ;;
            esac
        done
        printf '%-14s %-7s %6d %5d %7d %12d %9d\n' "$name" "$kind" "${count[$kind]}" "$runs" "$passed" "$unreached" \
            "$bad" >>"$WORK/table"
        all_runs=$((all_runs + runs)) all_passed=$((all_passed + passed))
        all_unreached=$((all_unreached + unreached)) all_bad=$((all_bad + bad))
    done
    printf '%-14s %-7s %6s %5d %7d %12d %9d  (%ds)\n' "$name" all "" "$all_runs" "$all_passed" "$all_unreached" \
        "$all_bad" $((SECONDS - start)) >>"$WORK/table"
    total_runs=$((total_runs + all_runs))
    [ "$all_bad" -eq 0 ] && rm -rf "${base:?}"
}

make_inputs || { echo "FAIL: could not make the inputs" >&2; exit 1; }
printf '%-14s %-7s %6s %5s %7s %12s %9s\n' command kind calls runs passed "not reached" problems >"$WORK/table"

# NAME ALLOCS,COPIES,LAUNCHES COMMAND...: the floors are half the calls
# each command made when they were set (at least 1): well below any run of
# the command, above a count that lost a kind.

sweep icp-kdtree 13,37,62 icp "$IN/scan.ply" "$IN/model.ply" --nn kdtree --device cuda:0 -o @OUT@/r.ply \
    --transform-out @OUT@/T.txt --json
sweep icp-delaunay 14,30,33 icp "$IN/scan.ply" --target-index "$IN/model.pti" --nn delaunay-pnnopt --max-iter 10 \
    --device cuda:0 -o @OUT@/r.ply
sweep icp-trim 13,36,242 icp "$IN/scan.ply" "$IN/model.ply" --nn brute --trim 0.8 --filter-sigma 2 --max-iter 10 \
    --repeat 2 --device cuda:0 -t @OUT@/T.txt
sweep emicp-fp32 3,14,15 emicp "$IN/scan.ply" "$IN/model.ply" --precision fp32 --max-iter 10 --device cuda:0 \
    -o @OUT@/r.ply --json
sweep emicp-fp16 3,9,7 emicp "$IN/scan.ply" "$IN/model.ply" --precision fp16 --max-iter 5 --device cuda:0 -t @OUT@/T.txt
sweep emicp-fp64 3,9,7 emicp "$IN/scan.ply" "$IN/model.ply" --precision fp64 --max-iter 5 --device cuda:0 -t @OUT@/T.txt
sweep lddmm 7,20,150 lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 5 --device cuda:0 \
    -o @OUT@/r.vtk --moved @OUT@/m.ply
sweep warp 8,10,19 warp "$IN/r.vtk" "$IN/ellipse16.csv" --device cuda:0 -o @OUT@/w.ply
sweep harris3d 3,6,2 harris3d "$IN/box_24x24x24_uint8.raw" --device cuda:0 -o @OUT@/k.csv --scores @OUT@/s.nrrd
sweep fpfh 6,9,1 fpfh "$IN/scan_n.ply" --k 10 --device cuda:0 -o @OUT@/f.csv --json
sweep pfh 5,9,1 pfh "$IN/scan_n.ply" --k 8 --device cuda:0 -o @OUT@/p.npy
sweep normals 6,11,1 normals "$IN/scan.ply" --k 10 --device cuda:0 -o @OUT@/n.ply --json
sweep voxel 7,12,3 convert "$IN/scan_n.ply" --voxel 0.05 --device cuda:0 -o @OUT@/v.ply
sweep batch-atoms 9,17,1 batch "$IN/al.pos" --radius 0.35 --device cuda:0 -o @OUT@/o.npy
sweep batch 4,9,1 batch --pairs "$IN/two.ptpairs" --device cuda:0 -o @OUT@/o.npy

cat "$WORK/table"
# a name given that is no sweep (a typo, a sweep renamed) would sweep nothing
for name in "${only[@]}"; do
    [[ $declared == *" $name "* ]] || problem "no sweep named '$name'"
done
[ "$total_runs" -gt 0 ] || problem "no failure was injected"
echo "$total_runs runs with an injected failure, $problems problems"
[ "$problems" -eq 0 ] || exit 1
echo ok
