# The device work of every device command, pinned: kernel launches, bytes
# to and from the device, buffers allocated and graphs run per call and per iteration
# of the iterative ones (the JSON's device_* keys, ptreg_device_stats) on POCL (opencl:0) and the
# CUDA driver stand-in (cuda:0), against tests/cli/device_counts.txt. A
# change that adds launches or traffic fails here and shows in review; when
# the change is meant, rewrite the file with PTREG_COUNTS_UPDATE=1 and say
# why in bench/NOTES.md. Skips (77) without an OpenCL device (fails under
# PTREG_TEST_REQUIRE_DEVICE=1, as without the stand-in).
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
golden=$root/tests/cli/device_counts.txt
has_opencl || finish
devices=(opencl:0)
bin=$(cd "$(dirname "$PTREG")" && pwd)
if [ -e "$bin/cuda_standin/libcuda.so.1" ]; then
    devices+=(cuda:0)
else
    missing PTREG_TEST_REQUIRE_DEVICE "no CUDA driver stand-in in $bin/cuda_standin: cuda:0's counts did not run"
fi
export PTREG_BUILD=$bin CUDA_STANDIN_STRICT=1
unset PTREG_DEVICE

expect 0 -- "$PTREG" synth --model "$WORK/m.ply" -o "$WORK/s.ply" --model-points 4000 --points 3000
expect 0 -- "$PTREG" synth --shape apt-polycrystal -o "$WORK/a.pos" --box 5 --grains 2
python3 - "$WORK" <<'PY'
import math, sys
w = sys.argv[1]
vox = bytearray(40 * 36 * 30)
for z in range(8, 22):
    for y in range(10, 26):
        for x in range(12, 28):
            vox[(z * 36 + y) * 40 + x] = 200
open(f"{w}/box_40x36x30_uint8.raw", "wb").write(vox)
ell = [(1.5 * math.cos(0.2 * k), 0.7 * math.sin(0.2 * k), 0.0) for k in range(31)]
cir = [(math.cos(0.2 * k), math.sin(0.2 * k), 0.0) for k in range(31)]
for name, pts in (("ellipse", ell), ("circle", cir)):
    open(f"{w}/{name}.csv", "w").write("x,y,z\n" + "".join("%.9g,%.9g,%.9g\n" % p for p in pts))
PY

# name: ptreg arguments (@D@: the device); every run gives --json
cases=(
    "icp-brute:icp $WORK/s.ply $WORK/m.ply --nn brute --max-iter 10 --device @D@"
    "icp-kdtree:icp $WORK/s.ply $WORK/m.ply --nn kdtree --max-iter 10 --device @D@"
    "icp-pnnopt:icp $WORK/s.ply $WORK/m.ply --nn delaunay-pnnopt --max-iter 10 --device @D@"
    "icp-plane:icp $WORK/s.ply $WORK/m.ply --method plane --nn kdtree --max-iter 10 --tol 0 --device @D@"
    "icp-gicp-huber:icp $WORK/s.ply $WORK/m.ply --method gicp --kernel huber --kernel-scale 0.05 --nn kdtree --max-iter 10 --tol 0 --device @D@"
    "emicp:emicp $WORK/s.ply $WORK/m.ply --max-iter 10 --device @D@"
    "fpfh:fpfh $WORK/s.ply -k 16 -o $WORK/f.npy --device @D@"
    "pfh:pfh $WORK/s.ply -k 8 -o $WORK/p.npy --device @D@"
    "normals:normals $WORK/s.ply -k 16 -o $WORK/n.ply --device @D@"
    "normals-radius:normals $WORK/s.ply --radius 0.05 -o $WORK/n.ply --device @D@"
    "harris3d:harris3d $WORK/box_40x36x30_uint8.raw -o $WORK/k.csv --device @D@"
    "lddmm:lddmm $WORK/ellipse.csv $WORK/circle.csv --sigma 0.3 --steps 10 --max-iter 5 -o $WORK/l.vtk --device @D@"
    "batch:batch $WORK/a.pos -o $WORK/b.npy --device @D@"
)

counts() { # the JSON on stdin -> "launches to from allocs graphs | per-iteration ..."
    python3 -c '
import json, sys
d = json.load(sys.stdin)
keys = ("launches", "bytes_to", "bytes_from", "allocs", "graphs")
line = " ".join(str(int(d["device_" + k])) for k in keys)
it = d.get("device_per_iteration")
print(line + (" | " + " ".join("%g" % it[k] for k in keys) if it else ""))'
}

got=$WORK/counts.txt
: >"$got"
for device in "${devices[@]}"; do
    run=("$PTREG")
    [ "$device" = cuda:0 ] && run=("$root/scripts/with-cuda-standin.sh" "$PTREG")
    for case in "${cases[@]}"; do
        name=${case%%:*} args=${case#*:}
        # shellcheck disable=SC2086
        expect 0 -- "${run[@]}" ${args//@D@/$device} --json
        echo "$device $name $(counts <"$WORK/out")" >>"$got"
    done
done
if [ "${PTREG_COUNTS_UPDATE:-0}" = 1 ]; then
    { sed -n '/^#/p' "$golden" 2>/dev/null; cat "$got"; } >"$WORK/new" && mv "$WORK/new" "$golden"
    echo "rewrote $golden"
fi
for device in "${devices[@]}"; do
    if ! diff <(grep "^$device " "$golden") <(grep "^$device " "$got") >"$WORK/diff"; then
        fail "$device: the device work differs from tests/cli/device_counts.txt (< pinned, > now):"
        sed 's/^/  /' "$WORK/diff" >&2
    fi
done
finish
