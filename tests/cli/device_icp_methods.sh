# Every ICP method on the device gives the CPU's answer: point, plane, GICP
# and symmetric, each without a robust kernel and with Huber's and Tukey's,
# on the real bunny pair and the real LiDAR pair (../shared/data), on POCL
# (opencl:0) and on the CUDA driver stand-in (cuda:0). The same iterations
# (--tol 0), and the transforms within 1e-6 of the CPU's (element by
# element): the device sums the same pairs' linearisations in double, in
# another order. Then ptreg register the same way. Skips (77) without the
# data or an OpenCL device.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
has_data || finish
has_opencl || finish
bin=$(cd "$(dirname "$PTREG")" && pwd)
devices=(opencl:0)
if [ -e "$bin/cuda_standin/libcuda.so.1" ]; then
    devices+=(cuda:0)
else
    missing PTREG_TEST_REQUIRE_DEVICE "no CUDA driver stand-in in $bin/cuda_standin: cuda:0 did not run"
fi
export PTREG_BUILD=$bin CUDA_STANDIN_STRICT=1
unset PTREG_DEVICE

# run DEVICE OUT ARGS...: ptreg icp on DEVICE (cuda:0 under the stand-in), its transform in OUT
run() {
    local device=$1 out=$2
    shift 2
    local wrap=()
    [ "$device" = cuda:0 ] && wrap=("$root/scripts/with-cuda-standin.sh")
    expect 0 -- "${wrap[@]}" "$PTREG" icp "$@" --device "$device" --json -t "$out"
    if grep -q "VIOLATION" "$WORK/err"; then
        fail "a stand-in violation: ptreg icp $*"
    fi
    cp "$WORK/out" "$out.json"
}

# The sanitized build (PTREG_DEVICE_ICP_QUICK=1: tests/CMakeLists.txt) runs
# each method once on the bunny: the host code is the same for every kernel
# and pair, and the grid's bits are the Release build's to check.
kernels=(none huber tukey)
[ "${PTREG_DEVICE_ICP_QUICK:-0}" = 1 ] && kernels=(none)

# pair NAME SOURCE TARGET SCALE ARGS...: the grid on one pair; SCALE the kernels' k
pair() {
    local name=$1 source=$2 target=$3 scale=$4
    shift 4
    for method in point plane gicp symmetric; do
        for kernel in "${kernels[@]}"; do
            local args=("$source" "$target" --method "$method" --max-iter 10 --tol 0 "$@")
            [ "$kernel" != none ] && args+=(--kernel "$kernel" --kernel-scale "$scale")
            local tag="$name-$method-$kernel"
            run cpu "$WORK/$tag-cpu.txt" "${args[@]}"
            for device in "${devices[@]}"; do
                run "$device" "$WORK/$tag-$device.txt" "${args[@]}"
                checks tables "$WORK/$tag-cpu.txt" "$WORK/$tag-$device.txt" 1e-6 --cols 4 \
                    --what "$name, --method $method --kernel $kernel: the CPU's transform and $device's"
                checks json "$WORK/$tag-$device.txt.json" iterations '==' \
                    "$(checks json-get "$WORK/$tag-cpu.txt.json" iterations)"
            done
        done
    done
}

pair bunny "$DATA/bunny/bun045.ply" "$DATA/bunny/bun000.ply" 0.005
[ "${PTREG_DEVICE_ICP_QUICK:-0}" = 1 ] || pair lidar "$DATA/lidar/source.ply" "$DATA/lidar/target.ply" 0.3 --max-dist 1.0

# ptreg register: RANSAC's hypotheses scored on the device (the same run and
# winner as the CPU's) and the refinement there (the transform within 1e-6)
for device in cpu "${devices[@]}"; do
    wrap=()
    [ "$device" = cuda:0 ] && wrap=("$root/scripts/with-cuda-standin.sh")
    expect 0 -- "${wrap[@]}" "$PTREG" register "$DATA/bunny/bun045.ply" "$DATA/bunny/bun000.ply" --device "$device" \
        --json -t "$WORK/register-$device.txt"
    cp "$WORK/out" "$WORK/register-$device.json"
    [ "$device" = cpu ] && continue
    for key in ransac_hypotheses ransac_checked ransac_inliers matches; do
        checks json "$WORK/register-$device.json" "$key" '==' "$(checks json-get "$WORK/register-cpu.json" "$key")"
    done
    checks tables "$WORK/register-cpu.txt" "$WORK/register-$device.txt" 1e-6 --cols 4 \
        --what "register: the CPU's transform and $device's"
done
finish
