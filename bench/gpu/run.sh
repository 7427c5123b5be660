#!/usr/bin/env bash
# The one call for a GPU machine, whatever the issue at hand (bench/README.md):
#   here:   bench/gpu/prepare.sh          (makes .gpu/: a build and libraries to fall back on)
#   there:  bench/gpu/run.sh "$OUT"       (the device tool's run, carrying .gpu)
# It builds ptreg with the CUDA and OpenCL backends (or takes .gpu/bin when
# the machine cannot build it), lists the devices, runs the device tests and
# the parity suite on every GPU backend found, prints ptxas's resources per
# kernel, then every GPU benchmark in bench/ against ptreg's CPU path on all
# of the machine's cores (batched EM-ICP: batch_gpu; EM-ICP and LDDMM:
# pairs_gpu, and a dense PyTorch peer where PyTorch is installed:
# peers/torch_pairs.py; 3-D Harris: harris_gpu; FPFH: features_gpu; the
# tuner: ptreg tune --device; ICP: icp_gpu.py; register: register_gpu.py;
# track: track_gpu.py; odometry: odometry_gpu.py). It
# writes OUTDIR/report.md and OUTDIR/results.json (plus log.txt, parity.txt,
# nvrtc.txt) and prints a short table last. It keeps within one deadline
# (570 s; the steps in order of importance, each cut to the time left):
# --quick (or less than 400 s left when the ICP step starts) leaves out the
# bunny and the 1M-point case, and --quick the batch benchmark's 10^6 pairs,
# per-pair targets and most layouts.
# Environment:
#   PTREG_GPU_BUILD=DIR     take an existing build (DIR/ptreg, DIR/tests, DIR/bench)
#                           instead of building afresh in scratch
#   PTREG_GPU_PREBUILT=1    take .gpu/bin without trying to build
#   PTREG_GPU_DEVICES=LIST  the devices to run on (default: every device that
#                           says "gpu": true, never a stand-in or POCL)
#   PTREG_GPU_{BATCH,PAIRS,HARRIS,FEATURES,BENCH,TORCH,TUNE,ODOMETRY}_ARGS: more options
#                           for each step (a dry run's smaller sizes);
#   PTREG_GPU_TUNE_SIZES="pair=N,lddmm=N,harris=N,fpfh=N": the tuner's sizes
#   PTREG_GPU_DEADLINE=S    the run's deadline in seconds (default 570)
# A dry run through the CUDA driver stand-in: tests/cuda_standin/gpu_run.sh.
set -uo pipefail
OUT=${1:?usage: bench/gpu/run.sh OUTDIR [--quick]}
QUICK=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=${TMPDIR:-/tmp}/ptreg-gpu
mkdir -p "$OUT" "$scratch"
# no result of an earlier run may stand in for this run's (the build and
# the ICP benchmark's clouds stay)
rm -f "$scratch"/*.md "$scratch"/*.json "$scratch"/*.txt "$scratch"/*.csv
exec > >(tee "$OUT/log.txt") 2>&1
started=$(date +%s)
elapsed() { echo $(($(date +%s) - started)); }
step() { echo; echo "== [$(elapsed) s] $*"; }
# One deadline for the whole run (the device tool's call is 600 s): the steps
# come in the order of what matters most (parity, ICP, EM-ICP and LDDMM, batch,
# features, the tuner, the PyTorch peer), and each takes at most its share,
# cut to what is left before the deadline less the report's 15 s, so a short
# call still returns the first steps' numbers. PTREG_GPU_DEADLINE: another.
deadline=${PTREG_GPU_DEADLINE:-570}
budget() { # budget MAX: the seconds a step may take now (1: none left)
    local left=$((deadline - 15 - $(elapsed)))
    [ "$left" -lt 1 ] && left=1 # (timeout 0 would not stop it)
    echo $(("$1" < left ? "$1" : left))
}

step "machine"
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null ||
    echo "nvidia-smi: not here"
echo "cores: $(nproc); commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"

# Libraries carried from the development machine, and the two things a
# container's driver mount may not say: where NVRTC is, and the OpenCL
# vendor file that points the ICD loader at NVIDIA's driver.
[ -d "$root/.gpu/lib" ] && export LD_LIBRARY_PATH="$root/.gpu/lib:${LD_LIBRARY_PATH:-}"
find_library() {
    { ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF}'
      ls /usr/local/nvidia/lib64/"$1" /usr/local/cuda/lib64/"$1" /usr/lib/x86_64-linux-gnu/"$1" 2>/dev/null
      python3 -c "import nvidia.cuda_nvrtc, os; print(os.path.join(nvidia.cuda_nvrtc.__path__[0], 'lib', '$1'))" \
          2>/dev/null; } | while read -r f; do [ -e "$f" ] && echo "$f"; done | head -1
}
# A PTREG_NVRTC given is kept (the stand-in's recorder, a pip wheel's).
# grep reads all of ldconfig's list: with -q it could stop early, and under
# pipefail ldconfig's SIGPIPE would read as "no NVRTC here".
if [ -z "${PTREG_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep 'libnvrtc\.so' >/dev/null; then
    nvrtc=$(find_library libnvrtc.so; find_library libnvrtc.so.13; find_library libnvrtc.so.12)
    nvrtc=${nvrtc%%$'\n'*}
    [ -n "$nvrtc" ] && export PTREG_NVRTC=$nvrtc && echo "NVRTC: $nvrtc"
fi
if ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
    ocl=$(find_library libnvidia-opencl.so.1)
    if [ -n "$ocl" ]; then
        mkdir -p "$scratch/vendors" && echo "$ocl" >"$scratch/vendors/nvidia.icd"
        export OCL_ICD_VENDORS=$scratch/vendors && echo "OpenCL: NVIDIA's ICD at $ocl"
    fi
fi

step "build (CUDA and OpenCL backends)"
bin="" tests="" batch="" pairs="" harris="" features=""
# PTREG_GPU_BUILD=DIR takes a build made already; PTREG_GPU_PREBUILT=1 takes
# .gpu/bin without trying to build
if [ -n "${PTREG_GPU_BUILD:-}" ]; then
    b=$(cd "$PTREG_GPU_BUILD" 2>/dev/null && pwd)
    if [ -z "$b" ] || [ ! -x "$b/ptreg" ]; then
        echo "PTREG_GPU_BUILD=$PTREG_GPU_BUILD: no ptreg there"
        exit 1
    fi
    bin=$b/ptreg tests=$b/tests batch=$b/bench/batch_gpu pairs=$b/bench/pairs_gpu
    harris=$b/bench/harris_gpu features=$b/bench/features_gpu
    echo "PTREG_GPU_BUILD: using the build in $b"
elif [ -z "${PTREG_GPU_PREBUILT:-}" ] && command -v cmake >/dev/null && command -v pkg-config >/dev/null &&
    timeout 300 cmake -S "$root" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release -DPTREG_CUDA=ON -DPTREG_OPENCL=ON \
        >"$scratch/build.log" 2>&1 &&
    timeout 300 cmake --build "$scratch/build" -j "$(nproc)" >>"$scratch/build.log" 2>&1; then
    bin=$scratch/build/ptreg tests=$scratch/build/tests batch=$scratch/build/bench/batch_gpu
    pairs=$scratch/build/bench/pairs_gpu harris=$scratch/build/bench/harris_gpu
    features=$scratch/build/bench/features_gpu
    echo "built here in $scratch/build"
elif [ -x "$root/.gpu/bin/ptreg" ]; then
    bin=$root/.gpu/bin/ptreg tests=$root/.gpu/bin batch=$root/.gpu/bin/batch_gpu pairs=$root/.gpu/bin/pairs_gpu
    harris=$root/.gpu/bin/harris_gpu features=$root/.gpu/bin/features_gpu
    if [ -n "${PTREG_GPU_PREBUILT:-}" ]; then
        echo "PTREG_GPU_PREBUILT: using the build carried in .gpu/bin"
    else
        echo "could not build here (the log's tail below); using the build carried in .gpu/bin"
        tail -5 "$scratch/build.log" 2>/dev/null
    fi
else
    echo "cannot build here and no .gpu/bin: run bench/gpu/prepare.sh on the development machine and carry .gpu"
    tail -20 "$scratch/build.log" 2>/dev/null
    exit 1
fi
"$bin" --version

step "devices"
"$bin" devices
"$bin" devices --json >"$scratch/devices.json"
# PTREG_GPU_DEVICES=opencl:0 (say) names the devices instead: a dry run on
# POCL or on the CUDA driver stand-in; the automatic pick never takes either
gpus=${PTREG_GPU_DEVICES:-$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print(','.join(x['device'] for x in d['devices']
               if x['gpu'] and not x.get('standin') and x['backend'] in ('cuda', 'opencl')))" \
    "$scratch/devices.json")}
echo "GPU devices: ${gpus:-none}"
# a device in use that is not a GPU: said here and in the report
standin=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
use = [x for x in sys.argv[2].split(',') if x]
for x in d['devices']:
    if x['device'] in use and x.get('standin'):
        print('%s is the CUDA driver stand-in on POCL: timings mean nothing, the run proves the script.'
              % x['device'])
    elif x['device'] in use and not x['gpu']:
        print('%s is not a GPU (%s): timings mean nothing, the run proves the script.' % (x['device'], x['name']))" \
    "$scratch/devices.json" "$gpus" 2>/dev/null)
[ -n "$standin" ] && echo "NOTE: $standin"

step "device tests and the parity suite on every GPU device"
: >"$OUT/parity.txt"
for dev in ${gpus//,/ }; do
    for t in test_device test_device_parity; do
        PTREG_TEST_DEVICE=$dev timeout "$(budget 300)" "$tests/$t" >"$scratch/$t.txt" 2>&1
        rc=$?
        { echo "--- $t on $dev: exit $rc"; cat "$scratch/$t.txt"; } >>"$OUT/parity.txt"
        echo "$t on $dev: exit $rc: $(tail -1 "$scratch/$t.txt")"
        grep "^FAIL" "$scratch/$t.txt" | head -20
    done
done
[ -n "$gpus" ] || echo "no GPU device found: nothing to test" | tee -a "$OUT/parity.txt"

step "every kernel through NVRTC for sm_90: registers, spills, shared memory"
timeout "$(budget 60)" "$tests/test_kernels_nvrtc" >"$OUT/nvrtc.txt" 2>&1
cat "$OUT/nvrtc.txt"

step "benchmarks: ICP on each GPU against the CPU path on $(nproc) threads"
data=$root/.gpu/data
[ -e "$data/bunny/bun.conf" ] || data=$root/../shared/data
cases=blob,aircraft,bunny,lidar,lidar-voxel,1m
if [ "$QUICK" = "--quick" ] || [ "$(budget 400)" -lt 400 ]; then
    cases=blob,aircraft
    echo "(quick: $cases)"
fi
# PTREG_GPU_BENCH_ARGS: more options for icp_gpu.py (a dry run's "--rounds 1 --repeat 2")
# shellcheck disable=SC2086
icp_s=$(budget 240)
timeout "$icp_s" python3 "$root/bench/gpu/icp_gpu.py" --ptreg "$bin" --devices "$gpus" --cases "$cases" \
    --work "$scratch/icp" --out "$scratch" --data "$data" --threads "$(nproc)" ${PTREG_GPU_BENCH_ARGS:-}
echo "exit $?"

step "benchmarks: register, the bunny from 20 random poses, on each GPU against the CPU path on $(nproc) threads"
# RANSAC scored and the refinement run on the device; PTREG_GPU_REGISTER_ARGS: more options
register_args="--poses 20"
[ "$QUICK" = "--quick" ] && register_args="--poses 2"
if [ -n "$gpus" ] && [ -e "$data/bunny/bun000.ply" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 60)" python3 "$root/bench/gpu/register_gpu.py" --ptreg "$bin" --devices "$gpus" --data "$data" \
        --work "$scratch/register" --out "$scratch" --threads "$(nproc)" $register_args ${PTREG_GPU_REGISTER_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device or no bunny: skipped" | tee "$scratch/register_gpu.md"
fi

step "benchmarks: track, a 300-frame approach, on each GPU against the CPU path on $(nproc) threads"
# point-to-plane (track's default); PTREG_GPU_TRACK_ARGS: more options (a dry run's fewer frames)
track_args="--frames 300 --points 30000"
[ "$QUICK" = "--quick" ] && track_args="--frames 10 --points 3000"
if [ -n "$gpus" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 60)" python3 "$root/bench/gpu/track_gpu.py" --ptreg "$bin" --devices "$gpus" \
        --work "$scratch/track" --out "$scratch" --threads "$(nproc)" $track_args ${PTREG_GPU_TRACK_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device: skipped" | tee "$scratch/track_gpu.md"
fi

step "benchmarks: odometry, a 300-frame generated drive (64 beams), on each GPU against the CPU path on $(nproc) threads"
# PTREG_GPU_ODOMETRY_ARGS: more options (a dry run's fewer frames)
odometry_args="--frames 300 --beams 64"
[ "$QUICK" = "--quick" ] && odometry_args="--frames 10 --beams 16"
if [ -n "$gpus" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 60)" python3 "$root/bench/gpu/odometry_gpu.py" --ptreg "$bin" --devices "$gpus" \
        --work "$scratch/odometry" --out "$scratch" --threads "$(nproc)" $odometry_args ${PTREG_GPU_ODOMETRY_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device: skipped" | tee "$scratch/odometry_gpu.md"
fi

step "benchmarks: EM-ICP and LDDMM on each GPU against the CPU path on $(nproc) threads"
# EM-ICP at n = m = 10^4 .. 10^6 per precision (the CPU to 10^5), one LDDMM
# evaluation at N = 2*10^4 and 10^5 (the CPU at 2*10^4), the study's
# configuration end to end; PTREG_GPU_PAIRS_ARGS: more options (a dry run's)
pairs_args="--emicp-sizes 10000,100000,1000000 --lddmm-sizes 20000,100000"
[ "$QUICK" = "--quick" ] && pairs_args="--emicp-sizes 10000,100000 --precisions fp32 --lddmm-sizes 20000 --no-cpu-study"
if [ -n "$gpus" ] && [ -x "$pairs" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 110)" "$pairs" --devices "$gpus" --md "$scratch/pairs_gpu.md" --json "$scratch/pairs_gpu.json" \
        $pairs_args ${PTREG_GPU_PAIRS_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device or no pairs_gpu ($pairs): skipped" | tee "$scratch/pairs_gpu.md"
fi
# The same LDDMM evaluation and study on the first GPU with each evaluation's
# launches made one by one (PTREG_DEVICE_GRAPHS=0) instead of one graph: what
# the graph saves
first_gpu=${gpus%%,*}
if [ -n "$first_gpu" ] && [ -x "$pairs" ]; then
    step "benchmarks: LDDMM without graphs (launch by launch) on $first_gpu"
    # shellcheck disable=SC2086
    PTREG_DEVICE_GRAPHS=0 timeout "$(budget 50)" "$pairs" --devices "$first_gpu" --emicp-sizes 10000 --precisions fp32 \
        --lddmm-sizes 20000 --no-cpu-study --md "$scratch/pairs_gpu_nographs.md" \
        --json "$scratch/pairs_gpu_nographs.json" ${PTREG_GPU_PAIRS_ARGS:-}
    echo "exit $?"
fi
step "benchmarks: batched EM-ICP on each GPU against the CPU path on $(nproc) threads"
# 10^4 .. 10^6 pairs of 12 and 32 points, 10 iterations and the whole
# schedule, shared and per-pair targets, then the work-group layouts;
# PTREG_GPU_BATCH_ARGS: more options (a dry run's smaller sizes)
batch_args="--sizes 10000,100000,1000000 --targets shared,pairs --layouts 32x4,32x2,32x8,16x8,8x4,4x8,1x32"
[ "$QUICK" = "--quick" ] && batch_args="--sizes 10000,100000 --targets shared --layouts 32x4,1x32"
if [ -n "$gpus" ] && [ -x "$batch" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 120)" "$batch" --devices "$gpus" --md "$scratch/batch_gpu.md" --json "$scratch/batch_gpu.json" \
        $batch_args ${PTREG_GPU_BATCH_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device or no batch_gpu ($batch): skipped" | tee "$scratch/batch_gpu.md"
fi

step "benchmarks: an orientation map of 10^6 atoms on the first GPU against the CPU path on $(nproc) threads"
# each atom's 12 neighbors from the 8 starts of the fcc motif (the batch
# engine's lanes on the device; neighbor lists and starts on the host;
# pooled grains take pairs over the device's 64 points: CPU only);
# PTREG_GPU_APT_BOX: another box (nm; --quick: 5 nm, 4,500 atoms)
apt_box=${PTREG_GPU_APT_BOX:-30,30,32}
[ "$QUICK" = "--quick" ] && apt_box=${PTREG_GPU_APT_BOX:-5}
if [ -n "$first_gpu" ] && [ -x "$bin" ] &&
    timeout "$(budget 30)" "$bin" synth --shape apt-polycrystal -o "$scratch/apt.pos" --noise 0.03 \
        --efficiency 0.6 --box "$apt_box" --grains 20 --seed 2 >/dev/null; then
    for dev in "$first_gpu" cpu; do
        echo "--- batch --device $dev"
        timeout "$(budget 90)" "$bin" batch "$scratch/apt.pos" -o "$scratch/apt_${dev%%:*}.npy" --device "$dev" \
            --json >"$scratch/apt_${dev%%:*}.json"
        echo "exit $?"
    done
    python3 "$root/bench/gpu/apt_summary.py" "$scratch" "${first_gpu%%:*}" | tee "$scratch/apt_gpu.md"
else
    echo "no GPU device or no ptreg ($bin), or no atoms: skipped" | tee "$scratch/apt_gpu.md"
fi

step "benchmarks: 3-D Harris and FPFH on each GPU against the CPU path on $(nproc) threads"
# Harris: 256x256x128 uint8, W = 5, every kernel variant, resident and with
# the upload; FPFH: 10^6 points, ~50 neighbors. PTREG_GPU_HARRIS_ARGS,
# PTREG_GPU_FEATURES_ARGS: more options (a dry run's smaller sizes)
if [ -n "$gpus" ] && [ -x "$harris" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 45)" "$harris" --devices "$gpus" --md "$scratch/harris_gpu.md" --json "$scratch/harris_gpu.json" \
        ${PTREG_GPU_HARRIS_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device or no harris_gpu ($harris): skipped" | tee "$scratch/harris_gpu.md"
fi
if [ -n "$gpus" ] && [ -x "$features" ]; then
    # shellcheck disable=SC2086
    timeout "$(budget 60)" "$features" --devices "$gpus" --md "$scratch/features_gpu.md" --json "$scratch/features_gpu.json" \
        ${PTREG_GPU_FEATURES_ARGS:-}
    echo "exit $?"
    # the k-NN lists by one search per point, against the groups above
    # shellcheck disable=SC2086
    PTREG_NN_DEVICE_KNN=single timeout "$(budget 40)" "$features" --devices "$gpus" --md "$scratch/features_single.md" \
        --json "$scratch/features_single.json" ${PTREG_GPU_FEATURES_ARGS:-}
    echo "exit $?"
else
    echo "no GPU device or no features_gpu ($features): skipped" | tee "$scratch/features_gpu.md"
fi

step "the autotuner on the first GPU: each device space, tuned against its defaults"
: >"$scratch/tune_gpu.txt"
dev=${gpus%%,*}
# every candidate (40 at most) within a 15 s budget each, a private cache:
# the E-step at 10^5 x 10^5 pairs, LDDMM at 20k landmarks, Harris on 256^2 x
# 128, FPFH on 200k points; PTREG_GPU_TUNE_SIZES (pair=N,...) other sizes,
# PTREG_GPU_TUNE_ARGS more options (a dry run's "--budget 3 --reps 1")
tune_sizes=${PTREG_GPU_TUNE_SIZES:-}
for job in "pair 100000" "lddmm 20000" "harris 256" "fpfh 200000"; do
    set -- $job
    [ -n "$dev" ] || break
    for o in ${tune_sizes//,/ }; do
        [ "${o%%=*}" = "$1" ] && set -- "$1" "${o#*=}"
    done
    {
        echo "--- tune --kernel $1 --size $2 on $dev"
        # shellcheck disable=SC2086
        PTREG_TUNE_CACHE="$scratch/tune.json" timeout "$(budget 45)" "$bin" tune --kernel "$1" --device "$dev" --size "$2" \
            --search exhaustive --reps 3 --budget 15 --csv "$scratch/tune_$1_$dev.csv" ${PTREG_GPU_TUNE_ARGS:-} 2>&1
        echo "exit $?"
    } >>"$scratch/tune_gpu.txt"
done
cat "$scratch/tune_gpu.txt"

# the dense PyTorch peer (what a PyTorch user writes), where PyTorch is
# installed, in what time is left
torch_s=$(budget 100)
if [ "$torch_s" -gt 20 ]; then
    # shellcheck disable=SC2086
    timeout "$torch_s" python3 "$root/bench/peers/torch_pairs.py" --json "$scratch/torch_pairs.json" --repeat 2 \
        --emicp-sizes 10000,100000,1000000 --lddmm-sizes 1847,20000,100000 --lddmm-study ${PTREG_GPU_TORCH_ARGS:-} \
        >"$scratch/torch_pairs.txt" 2>&1
    echo "exit $?"; cat "$scratch/torch_pairs.txt"
else
    echo "no time left for the PyTorch peer" | tee "$scratch/torch_pairs.txt"
fi

step "report"
python3 - "$OUT" "$scratch" "$(elapsed)" "$gpus" "$standin" <<'PY'
import json, os, re, subprocess, sys
out, scratch, seconds, gpus, standin = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def read(path, default=""):
    try:
        return open(path).read()
    except OSError:
        return default
parity = read(os.path.join(out, "parity.txt"))
summary = [l for l in parity.splitlines() if re.match(r"^(---|FAIL|\d+ passed|all \d+ checks)", l)]
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip() if os.path.exists("/usr/bin/nvidia-smi") else ""
icp = read(os.path.join(scratch, "icp_gpu.md"), "(the ICP benchmark did not finish)\n")
track = read(os.path.join(scratch, "track_gpu.md"), "(the track benchmark did not finish)\n")
odometry = read(os.path.join(scratch, "odometry_gpu.md"), "(the odometry benchmark did not finish)\n")
register = read(os.path.join(scratch, "register_gpu.md"), "(the register benchmark did not finish)\n")
batch = read(os.path.join(scratch, "batch_gpu.md"), "(the batch benchmark did not finish)\n")
pairs = read(os.path.join(scratch, "pairs_gpu.md"), "(the EM-ICP and LDDMM benchmark did not finish)\n")
nographs = read(os.path.join(scratch, "pairs_gpu_nographs.md"), "(LDDMM without graphs did not run)\n")
torch = read(os.path.join(scratch, "torch_pairs.txt"), "(the PyTorch peer did not run)\n")
harris = read(os.path.join(scratch, "harris_gpu.md"), "(the Harris benchmark did not finish)\n")
features = read(os.path.join(scratch, "features_gpu.md"), "(the FPFH benchmark did not finish)\n")
apt = read(os.path.join(scratch, "apt_gpu.md"), "(the orientation map did not finish)\n")
single = read(os.path.join(scratch, "features_single.md"), "(FPFH with one search per point did not run)\n")
tune = read(os.path.join(scratch, "tune_gpu.txt"), "(the tuner did not run)\n")
nvrtc = read(os.path.join(out, "nvrtc.txt"))
report = ["# ptreg on the GPU machine" + (" (a dry run: no GPU)" if standin else ""), "",
          "Made by `bench/gpu/run.sh` in %d s. GPU: %s. GPU devices ptreg found: %s." % (seconds, smi or "?", gpus or "none"),
          *(["", "**Not a GPU run.** " + " ".join(standin.splitlines())] if standin else []),
          "", "## Device tests and parity suite", "", "```", *summary, "```", "",
          "## Batched EM-ICP (`batch_gpu`): ms per call from host memory, the kernel alone, pairs/s", "",
          batch, "",
          "## An orientation map of 10^6 atoms (`ptreg batch ATOMS --device`)", "", apt, "",
          "## EM-ICP and LDDMM (`pairs_gpu`)", "", pairs, "",
          "## LDDMM without graphs (`PTREG_DEVICE_GRAPHS=0`: each evaluation launch by launch)", "", nographs, "",
          "## The dense PyTorch peer (`peers/torch_pairs.py`)", "", "```", torch.strip(), "```", "",
          "## 3-D Harris (`harris_gpu`)", "", harris, "",
          "## FPFH (`features_gpu`)", "", features, "",
          "## FPFH, k-NN lists by one search per point (`PTREG_NN_DEVICE_KNN=single`)", "", single, "",
          "## The autotuner on the GPU (`ptreg tune --device`)", "", "```", tune.strip(), "```", "",
          "## ICP, 30 iterations: ms per frame (model resident), and from host memory (+ the model's upload)", "",
          icp, "## register: the bunny from 20 random poses (`register_gpu.py`)", "", register, "",
          "## track: a 300-frame approach, point-to-plane (`track_gpu.py`)", "", track, "",
          "## odometry: a 300-frame generated drive, 64 beams (`odometry_gpu.py`)", "", odometry, "",
          "## Kernels for sm_90 (NVRTC, ptxas -v)", "", "```", nvrtc.strip(), "```", ""]
open(os.path.join(out, "report.md"), "w").write("\n".join(report))
results = {"seconds": seconds, "gpu": smi, "gpu_devices": gpus.split(",") if gpus else [],
           "not_gpu": standin.splitlines(), "parity": summary}
for name in ("devices.json", "icp_gpu.json", "register_gpu.json", "track_gpu.json", "odometry_gpu.json", "batch_gpu.json", "pairs_gpu.json", "pairs_gpu_nographs.json",
             "torch_pairs.json", "harris_gpu.json", "features_gpu.json", "features_single.json"):
    try:
        results[name[:-5]] = json.load(open(os.path.join(scratch, name)))
    except (OSError, ValueError):
        results[name[:-5]] = None
used = results["gpu_devices"]
results["standin_devices"] = [x["device"] for x in (results["devices"] or {}).get("devices", [])
                              if x["device"] in used and x.get("standin")]
json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)
if standin:
    print("NOTE: " + " ".join(standin.splitlines()))
print("\n".join(summary[-8:]))
print()
print("\n".join(l for l in batch.splitlines() if l.startswith("Target")) or "(batch: no target line)")
print()
print(icp)
print(register)
print(track)
print(odometry)
PY
echo "done in $(elapsed) s: $OUT/report.md, $OUT/results.json"
