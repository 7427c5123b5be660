# ptreg's CUDA path without a GPU: every command under the CUDA driver
# stand-in (tests/cuda_standin, scripts/with-cuda-standin.sh), which runs the
# kernels on POCL within an H100's limits. cuda:0 is listed as the stand-in,
# never a GPU, and auto takes it only under --auto; every command with a
# device path gives the CPU's answer on it; the tuner runs there; an NVRTC
# newer than the driver and a kernel fault are refused with messages that
# say so, and nothing is written. No run may end with a stand-in violation
# (a leak, a copy out of range, a limit broken: exit 86). Skipped (77) when
# the build has no stand-in. The fault-injection sweep over every CUDA call
# is tests/cuda_standin/sweep.sh.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "$(dirname "$PTREG")" && pwd)
if [ ! -e "$bin/cuda_standin/libcuda.so.1" ] || [ ! -e "$bin/cuda_standin/libnvrtc-standin.so" ]; then
    echo "skip: no CUDA stand-in in $bin/cuda_standin"
    exit 77
fi
export PTREG_BUILD=$bin
# asynchronous copies' host sources checked when the stream reaches them
export CUDA_STANDIN_STRICT=1
unset CUDA_STANDIN_FAIL CUDA_STANDIN_DRIVER_VERSION PTREG_DEVICE_CHECKED PTREG_CUDA_STANDIN_AUTO PTREG_DEVICE

# cs WANT [--auto] ARGS...: ptreg ARGS under the stand-in, exit WANT, no violation.
cs() {
    local want=$1 auto=()
    shift
    [ "$1" = --auto ] && auto=(--auto) && shift
    expect "$want" -- "$root/scripts/with-cuda-standin.sh" "${auto[@]}" "$PTREG" "$@"
    if grep -q "VIOLATION" "$WORK/err"; then
        fail "a stand-in violation: ptreg $*"
        grep "VIOLATION" "$WORK/err" | head -3 | sed 's/^/  stderr: /' >&2
    fi
}

# ---- the list ----
cs 0 devices
out_has "cuda:0     CUDA stand-in (H100 limits, on POCL)"; out_has "never a real GPU"
grep -q "auto picks cuda:0" "$WORK/out" && fail "devices: auto picks the stand-in without --auto"
cs 0 devices --json
python3 - "$WORK/out" "cpu" <<'PY' || fail "devices --json: cuda:0 is not the stand-in, is a GPU, or auto takes it"
import json, sys
o = json.load(open(sys.argv[1]))
d = [x for x in o["devices"] if x["device"] == "cuda:0"]
assert len(d) == 1 and d[0]["standin"] is True and d[0]["gpu"] is False and d[0]["for_testing"] is True, d
assert d[0]["name"] == "CUDA stand-in (H100 limits, on POCL)", d[0]["name"]
assert d[0]["fma_contracts"] is False and d[0]["bit_exact"] is True, d
assert o["auto"] == sys.argv[2], o["auto"]
PY
# the contraction probe at device open: NVRTC's --fmad=false holds on the
# stand-in; a probe kernel made to fuse (PTREG_DEVICE_PROBE_FUSED=1, the
# tests' knob) is seen, as a device that ignores the rule would be
PTREG_DEVICE_PROBE_FUSED=1 cs 0 devices
out_has "not bit-exact: it fuses a\*b+c"
cs 0 --auto devices --json
python3 - "$WORK/out" "cuda:0" <<'PY' || fail "devices --json under --auto: auto does not take cuda:0, or it is a GPU"
import json, sys
o = json.load(open(sys.argv[1]))
d = [x for x in o["devices"] if x["device"] == "cuda:0"]
assert len(d) == 1 and d[0]["standin"] is True and d[0]["gpu"] is False and d[0]["for_testing"] is False, d
assert o["auto"] == sys.argv[2], o["auto"]
PY

# ---- inputs ----
cs 0 synth --shape blob --model "$WORK/model.ply" --model-points 3000 -o "$WORK/scan.ply" --points 2000 \
    --max-angle 8 --seed 3
cs 0 normals "$WORK/scan.ply" -o "$WORK/scan_n.ply"
cs 0 index "$WORK/model.ply" -o "$WORK/model.pti"
python3 "$(dirname "$0")/small_inputs.py" "$WORK" || fail "small_inputs.py"
printf 'x,y,z\n0,0,0\n1,0,0\n0,1,0\n1,1,0.5\n' >"$WORK/l1.csv"
printf 'x,y,z\n0.1,0,0\n1.2,0.1,0\n0,1.1,0.1\n1,1.2,0.4\n' >"$WORK/l2.csv"

# ---- ICP, every nearest-neighbor method: the CPU's transform within 1e-5 ----
for nn in auto brute kdtree delaunay-zero delaunay-kdann delaunay-pnn delaunay-pnnopt; do
    target=("$WORK/model.ply")
    [ "${nn#delaunay}" != "$nn" ] && target=(--target-index "$WORK/model.pti")
    cs 0 icp "$WORK/scan.ply" "${target[@]}" --nn $nn --device cpu -t "$WORK/T_cpu.txt"
    cs 0 icp "$WORK/scan.ply" "${target[@]}" --nn $nn --device cuda:0 --json -t "$WORK/T_dev.txt" \
        -o "$WORK/moved_$nn.ply"
    out_has '"device":	"cuda:0"'; has_file "$WORK/moved_$nn.ply"
    checks tables "$WORK/T_cpu.txt" "$WORK/T_dev.txt" 1e-5 --cols 4 --what "icp --nn $nn: CPU and cuda:0"
done
# auto takes the stand-in only under --auto
cs 0 icp "$WORK/scan.ply" "$WORK/model.ply" --json; out_has '"device":	"cpu"'
cs 0 --auto icp "$WORK/scan.ply" "$WORK/model.ply" --json; out_has '"device":	"cuda:0"'

# ---- EM-ICP in every precision ----
for p in fp32 fp16 fp64; do
    cs 0 emicp "$WORK/scan.ply" "$WORK/model.ply" --precision $p --max-iter 20 --device cpu -t "$WORK/E_cpu.txt"
    cs 0 emicp "$WORK/scan.ply" "$WORK/model.ply" --precision $p --max-iter 20 --device cuda:0 --json \
        -t "$WORK/E_dev.txt"
    out_has '"device":	"cuda:0"'
    checks tables "$WORK/E_cpu.txt" "$WORK/E_dev.txt" 1e-5 --cols 4 --what "emicp --precision $p: CPU and cuda:0"
done

# ---- LDDMM and warp ----
for dev in cpu cuda:0; do
    cs 0 lddmm "$WORK/l1.csv" "$WORK/l2.csv" --integrator rk2 --precision fp64 --device $dev -o "$WORK/lddmm_$dev.csv"
    cs 0 warp "$WORK/lddmm_$dev.csv" "$WORK/scan.ply" --device $dev -o "$WORK/warped_$dev.xyz"
done
# (each CSV: a header line after the comments)
checks tables "$WORK/lddmm_cpu.csv" "$WORK/lddmm_cuda:0.csv" 1e-6 --skip 1 --cols 6 --what "lddmm: CPU and cuda:0"
checks tables "$WORK/warped_cpu.xyz" "$WORK/warped_cuda:0.xyz" 1e-6 --cols 3 --what "warp: CPU and cuda:0"

# ---- features: Harris keypoints the CPU's, PFH and FPFH rows close ----
vol=$WORK/box_24x24x24_uint8.raw
cs 0 harris3d "$vol" --device cpu -o "$WORK/k_cpu.csv"
cs 0 harris3d "$vol" --device cuda:0 --json -o "$WORK/k_dev.csv"; out_has '"keypoints":	8'
cmp -s "$WORK/k_cpu.csv" "$WORK/k_dev.csv" || fail "harris3d: the keypoints on the CPU and cuda:0 differ"
cs 0 pfh "$WORK/scan_n.ply" --k 10 --device cpu -o "$WORK/p_cpu.csv"
cs 0 pfh "$WORK/scan_n.ply" --k 10 --device cuda:0 --json -o "$WORK/p_dev.csv"; out_has '"device":	"cuda:0"'
checks tables "$WORK/p_cpu.csv" "$WORK/p_dev.csv" 0.01 --skip 1 --cols 125 --what "pfh: CPU and cuda:0"
cs 0 fpfh "$WORK/scan_n.ply" --k 20 --device cpu -o "$WORK/f_cpu.csv"
cs 0 fpfh "$WORK/scan_n.ply" --k 20 --device cuda:0 --json -o "$WORK/f_dev.csv"; out_has '"device":	"cuda:0"'
checks tables "$WORK/f_cpu.csv" "$WORK/f_dev.csv" 0.01 --skip 1 --cols 33 --what "fpfh: CPU and cuda:0"
# normals: the CPU's bits; tangent-plane refused by name, nothing written
cs 0 normals "$WORK/scan.ply" --k 16 --device cpu -o "$WORK/n_cpu.ply"
cs 0 normals "$WORK/scan.ply" --k 16 --device cuda:0 --json -o "$WORK/n_dev.ply"; out_has '"device":	"cuda:0"'
cmp -s "$WORK/n_cpu.ply" "$WORK/n_dev.ply" || fail "normals: the CPU's and cuda:0's files differ"
cs 2 normals "$WORK/scan.ply" --orient tangent-plane --device cuda:0 -o "$WORK/n_never.ply"; err_has "tangent-plane"
no_file "$WORK/n_never.ply"
# convert --voxel: the CPU's points bit for bit; a device without double precision refused (exit 2)
cs 0 convert "$WORK/scan_n.ply" --voxel 0.05 -o "$WORK/v_cpu.ply"
cs 0 convert "$WORK/scan_n.ply" --voxel 0.05 --device cuda:0 -o "$WORK/v_dev.ply"
cmp -s "$WORK/v_cpu.ply" "$WORK/v_dev.ply" || fail "convert --voxel: the CPU's and cuda:0's files differ"
PTREG_DEVICE_NO_FP64=1 cs 2 convert "$WORK/scan_n.ply" --voxel 0.05 --device cuda:0 -o "$WORK/v_never.ply"
err_has "double precision"; no_file "$WORK/v_never.ply"

# ---- batch: pairs (a pairs file like tests/alloc/sweep.sh's) ----
python3 - "$WORK" <<'PY' || fail "the pairs file"
import math, struct, sys
w = sys.argv[1]
src, tgt, so, to = [], [], [0], [0]
for p in range(6):
    t = [(math.cos(0.7 * i + p), math.sin(1.3 * i), 0.1 * i + 0.05 * p) for i in range(10 + 3 * p)]
    c, s = math.cos(0.1 * p), math.sin(0.1 * p)
    src += [(c * x - s * y + 0.02, s * x + c * y, z - 0.01) for x, y, z in t]
    tgt += t
    so.append(len(src)), to.append(len(tgt))
with open(f"{w}/pairs.ptpairs", "wb") as f:
    f.write(b"PTPAIRS1" + struct.pack("<QQ", 6, 6) + struct.pack("<7Q", *so) + struct.pack("<7Q", *to))
    f.write(struct.pack("<%df" % (3 * (len(src) + len(tgt))), *[c for q in src + tgt for c in q]))
PY
cs 0 batch --pairs "$WORK/pairs.ptpairs" --device cpu -o "$WORK/b_cpu.csv"
cs 0 batch --pairs "$WORK/pairs.ptpairs" --device cuda:0 --json -o "$WORK/b_dev.csv"
out_has '"isa":	"CUDA stand-in'
# the poses and rms (not the iteration counts: the sums run in another order,
# and a pair may stop one iteration apart)
cut -d, -f1-8 "$WORK/b_cpu.csv" >"$WORK/b_cpu8.csv"; cut -d, -f1-8 "$WORK/b_dev.csv" >"$WORK/b_dev8.csv"
checks tables "$WORK/b_cpu8.csv" "$WORK/b_dev8.csv" 1e-5 --skip 1 --cols 8 --what "batch: CPU and cuda:0"

# ---- kernels whose own limit is below the device's (ROCm, Intel; CUDA_STANDIN_KERNEL_MAX_THREADS) ----
# batch, LDDMM and EM-ICP take smaller groups and give the CPU's answer; a kernel
# built for larger groups is refused, its limit and the device's named,
# nothing written
CUDA_STANDIN_KERNEL_MAX_THREADS=64 cs 0 batch --pairs "$WORK/pairs.ptpairs" --device cuda:0 -o "$WORK/b_dev64.csv"
cut -d, -f1-8 "$WORK/b_dev64.csv" >"$WORK/b_dev64_8.csv"
checks tables "$WORK/b_cpu8.csv" "$WORK/b_dev64_8.csv" 1e-5 --skip 1 --cols 8 \
    --what "batch: CPU and cuda:0 with kernels of at most 64 threads"
CUDA_STANDIN_KERNEL_MAX_THREADS=64 cs 0 lddmm "$WORK/l1.csv" "$WORK/l2.csv" --integrator rk2 --precision fp64 \
    --device cuda:0 -o "$WORK/lddmm_64.csv"
checks tables "$WORK/lddmm_cpu.csv" "$WORK/lddmm_64.csv" 1e-6 --skip 1 --cols 6 \
    --what "lddmm: CPU and cuda:0 with kernels of at most 64 threads"
# (E_cpu.txt: the CPU's fp64 EM-ICP, the last of the loop above)
CUDA_STANDIN_KERNEL_MAX_THREADS=64 cs 0 emicp "$WORK/scan.ply" "$WORK/model.ply" --precision fp64 --max-iter 20 \
    --device cuda:0 -t "$WORK/E_dev64.txt"
checks tables "$WORK/E_cpu.txt" "$WORK/E_dev64.txt" 1e-5 --cols 4 \
    --what "emicp: CPU and cuda:0 with kernels of at most 64 threads"
CUDA_STANDIN_KERNEL_MAX_THREADS=128 cs 4 icp "$WORK/scan.ply" "$WORK/model.ply" --device cuda:0 -o "$WORK/never.ply"
err_has "in work-groups of 256 threads: it runs at most 128 here"; err_has "the device's: 1024"
no_file "$WORK/never.ply"

# ---- the tuner on the device: each kernel it tunes there, small and short ----
for spec in pair:300 harris:16 fpfh:300 lddmm:50; do
    cs 0 tune --kernel "${spec%%:*}" --size "${spec#*:}" --device cuda:0 --search coordinate --sample 0.1 --reps 1 \
        --no-save --json
    out_has '"machine":	"cuda:0: CUDA stand-in'; out_has '"winner"'
done

# ---- an NVRTC newer than the driver: refused, both versions named ----
CUDA_STANDIN_DRIVER_VERSION=12080 cs 4 icp "$WORK/scan.ply" "$WORK/model.ply" --device cuda:0 -o "$WORK/never.ply"
err_has "cuda:0"; err_has "NVRTC 13.0"; err_has "CUDA driver (12.8)"
no_file "$WORK/never.ply"
CUDA_STANDIN_DRIVER_VERSION=12080 cs 0 devices
out_has "CUDA driver 12.8, no usable NVRTC"; out_has "cannot compile kernels"; out_has "NVRTC 13.0, newer than"

# ---- a kernel that faults: exit 4, the kernel named, nothing written ----
CUDA_STANDIN_FAIL=fault:1 cs 4 icp "$WORK/scan.ply" "$WORK/model.ply" --device cuda:0 -o "$WORK/never.ply"
err_has "ptreg icp: cuda:0"; err_has "a kernel fault"; err_has "the last kernel launched was ptreg_"
err_has "PTREG_DEVICE_CHECKED=1"
no_file "$WORK/never.ply"
CUDA_STANDIN_FAIL=fault:3 PTREG_DEVICE_CHECKED=1 cs 4 icp "$WORK/scan.ply" "$WORK/model.ply" --device cuda:0 \
    -o "$WORK/never.ply"
faulted=$(sed -n 's/^cuda-standin: injected fault in kernel \([A-Za-z0-9_]*\) .*/\1/p' "$WORK/err")
[ -n "$faulted" ] || fail "the stand-in did not say which kernel it faulted"
err_has "kernel $faulted faulted: CUDA_ERROR_ILLEGAL_ADDRESS"
no_file "$WORK/never.ply"

finish
