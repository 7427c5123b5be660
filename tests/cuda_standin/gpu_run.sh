#!/usr/bin/env bash
# bench/gpu/run.sh --quick end to end through the CUDA driver stand-in, at
# small sizes: the one script meant for a GPU machine, proven before it
# meets one (its timings mean nothing here).
#   tests/cuda_standin/gpu_run.sh BUILD_DIR WORK_DIR
# Skips (77) without BUILD_DIR/cuda_standin/libcuda.so.1. Checks that the
# report and results exist and name cuda:0 as the stand-in, that
# test_device and test_device_parity pass on cuda:0, that the kernels
# compile through NVRTC, and that every benchmark step (batch, the
# orientation map, pairs, Harris, FPFH, the tuner, ICP) ran to the end on cuda:0 (the PyTorch peer
# may be absent). The parity step runs only the suite's geometry cases
# (PTREG_PARITY_ONLY=geometry, and quick, unless set): what is tested here is
# run.sh's step around the suite (its exit, summary and report lines); the
# whole suite on the stand-in is the device_parity_cuda test's.
# Environment as for scripts/with-cuda-standin.sh; POCL_CACHE_DIR defaults
# to BUILD_DIR/pocl-cache-gpu-run.
set -uo pipefail
build=${1:?usage: gpu_run.sh BUILD_DIR WORK_DIR}
work=${2:?usage: gpu_run.sh BUILD_DIR WORK_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ ! -e "$build/cuda_standin/libcuda.so.1" ]; then
    echo "gpu_run: no CUDA stand-in in $build/cuda_standin: skipped"
    exit 77
fi
build=$(cd "$build" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
out=$work/out
rm -rf "$out"
mkdir -p "$work/tmp"
started=$(date +%s)

# small sizes: each step a few seconds on the stand-in
env PTREG_BUILD="$build" PTREG_GPU_BUILD="$build" PTREG_GPU_DEVICES=cuda:0 TMPDIR="$work/tmp" \
    POCL_CACHE_DIR="${POCL_CACHE_DIR:-$build/pocl-cache-gpu-run}" \
    PTREG_PARITY_QUICK="${PTREG_PARITY_QUICK:-1}" PTREG_PARITY_ONLY="${PTREG_PARITY_ONLY-geometry}" \
    PTREG_GPU_BATCH_ARGS="--sizes 1000 --cpu-pairs 500 --layout-pairs 1000 --repeat 1" \
    PTREG_GPU_PAIRS_ARGS="--emicp-sizes 2000 --lddmm-sizes 300 --study 12 --steps 10 --repeat 1" \
    PTREG_GPU_HARRIS_ARGS="--dims 48,48,24 --repeat 1" \
    PTREG_GPU_FEATURES_ARGS="--points 3000 --k 20 --repeat 1" \
    PTREG_GPU_TUNE_SIZES="pair=2000,lddmm=200,harris=32,fpfh=2000" PTREG_GPU_TUNE_ARGS="--budget 3 --reps 1" \
    PTREG_GPU_BENCH_ARGS="--model-points 3000 --scan-points 2000 --rounds 1 --repeat 2 --cpu-repeat 1" \
    PTREG_GPU_TORCH_ARGS="--device cpu --emicp-sizes 1000 --lddmm-sizes 200 --lddmm-steps 5 --repeat 1" \
    "$root/scripts/with-cuda-standin.sh" "$root/bench/gpu/run.sh" "$out" --quick >"$work/run.txt" 2>&1
rc=$?
seconds=$(($(date +%s) - started))
sleep 1 # run.sh's tee into log.txt

python3 - "$out" "$rc" <<'PY'
import json, os, re, sys
out, rc = sys.argv[1], int(sys.argv[2])
bad = []
def read(name):
    try:
        return open(os.path.join(out, name)).read()
    except OSError:
        bad.append("%s: missing" % name)
        return ""
if rc:
    bad.append("bench/gpu/run.sh: exit %d" % rc)
report, log, parity, nvrtc = read("report.md"), read("log.txt"), read("parity.txt"), read("nvrtc.txt")
try:
    results = json.load(open(os.path.join(out, "results.json")))
except (OSError, ValueError) as e:
    bad.append("results.json: %s" % e)
    results = {}
if report and "cuda:0 is the CUDA driver stand-in on POCL" not in report:
    bad.append("report.md does not say that cuda:0 is the stand-in")
if results and results.get("standin_devices") != ["cuda:0"]:
    bad.append("results.json: standin_devices is %r, not ['cuda:0']" % results.get("standin_devices"))
for t in ("test_device", "test_device_parity"):
    line = "--- %s on cuda:0: exit 0" % t
    if line not in parity or line not in report:
        found = re.findall(r"^--- %s on .*$" % t, parity, re.M)
        bad.append("parity: %s" % (found[0] if found else "%s did not run on cuda:0" % t))
for l in parity.splitlines():
    if l.startswith("FAIL"):
        bad.append("parity: " + l)
if nvrtc and not re.search(r"^all \d+ checks passed", nvrtc, re.M):
    bad.append("test_kernels_nvrtc: %s" % (nvrtc.strip().splitlines() or ["no output"])[-1])
# every benchmark step: its own exit 0 in the log, its table in the report
steps = re.split(r"^== \[\d+ s\] ", log, flags=re.M)
def step(title):
    s = [x for x in steps if x.startswith(title)]
    return s[0] if s else None
for title, name in (("benchmarks: batched EM-ICP", "batch"), ("benchmarks: EM-ICP and LDDMM", "pairs"),
                    ("benchmarks: an orientation map", "orientation map"),
                    ("benchmarks: 3-D Harris and FPFH", "harris and features"), ("benchmarks: ICP", "ICP"),
                    ("benchmarks: odometry", "odometry")):
    s = step(title)
    if s is None:
        bad.append("log.txt: no step %r" % title)
        continue
    exits = re.findall(r"^exit (\d+)$", s, re.M)
    if not exits or any(e != "0" for e in exits):
        bad.append("%s: exits %s" % (name, ", ".join(exits) or "none"))
    for l in s.splitlines():
        if l.startswith("no GPU device or no"):
            bad.append("%s: %s" % (name, l))
for what in ("batch benchmark", "orientation map", "EM-ICP and LDDMM benchmark", "Harris benchmark", "FPFH benchmark",
             "ICP benchmark", "odometry benchmark"):
    if "(the %s did not finish)" % what in report:
        bad.append("report.md: the %s did not finish" % what)
for key in ("batch_gpu", "pairs_gpu", "harris_gpu", "features_gpu", "icp_gpu", "odometry_gpu"):
    if results and not results.get(key):
        bad.append("results.json: no %s" % key)
if report and "GPU/CPU wall" not in report:
    bad.append("report.md: the orientation map has no summary")
if "cuda:0 |" not in report:
    bad.append("report.md: no table row for cuda:0")
for r in (results.get("odometry_gpu") or {}).get("rows", []):
    if r["device"] != "cpu" and r.get("ran_on") != r["device"]:
        bad.append("odometry on %s ran on %s" % (r["device"], r.get("ran_on")))
for r in (results.get("icp_gpu") or {}).get("rows", []):
    if "error" in r:
        bad.append("ICP %s %s on %s: %s" % (r["case"], r["method"], r["device"], r["error"][:300]))
tune = re.findall(r"^--- tune --kernel (\S+).*?^exit (\d+)$", step("the autotuner") or "", re.M | re.S)
if len(tune) != 4 or any(e != "0" for k, e in tune):
    bad.append("the tuner: %s" % (", ".join("%s exit %s" % t for t in tune) or "did not run"))
if bad:
    print("gpu_run: FAILED")
    for b in bad:
        print("  " + b)
    sys.exit(1)
print("gpu_run: bench/gpu/run.sh --quick ran every step on the stand-in (cuda:0)")
PY
status=$?
if [ "$status" != 0 ]; then
    echo "--- the run's output (tail), in full in $work/run.txt and $out/log.txt:"
    tail -60 "$work/run.txt"
fi
echo "gpu_run: wall time ${seconds} s"
exit "$status"
