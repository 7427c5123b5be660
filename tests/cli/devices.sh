# Devices: the list, --device and PTREG_DEVICE on every command, and ICP on
# an OpenCL device when one is found (in CI: POCL, the CPU OpenCL driver).
. "$(dirname "$0")/lib.sh"

expect 0 -- "$PTREG" --version; out_has "cuda: "; out_has "opencl: "
expect 0 -- "$PTREG" devices; out_has "cpu"; out_has "auto picks"
expect 0 -- "$PTREG" devices --json; out_has '"devices"'; out_has '"backend":	"cpu"'
expect 0 -- "$PTREG" help devices; out_has "PTREG_DEVICE"

"$PTREG" synth --shape blob --model "$WORK/model.ply" --model-points 3000 -o "$WORK/scan.ply" --points 2000 \
    --max-angle 8 --truth-out "$WORK/truth.txt" --seed 3 >/dev/null || fail "synth"
"$PTREG" normals "$WORK/scan.ply" -o "$WORK/scan_n.ply" >/dev/null || fail "normals"
printf 'x,y,z\n0,0,0\n1,0,0\n0,1,0\n' >"$WORK/a.csv"
printf 'x,y,z\n0,0,1\n1,0,1\n0,1,1\n' >"$WORK/b.csv"

# every command that computes takes --device; a device it cannot use is a
# usage error that names the device (exit 2), and nothing is written
for dev in cuda cuda:3 opencl:7; do
    expect 2 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --device $dev -o "$WORK/never.ply"; err_has "$dev"
    expect 2 -- "$PTREG" normals "$WORK/scan.ply" --device $dev -o "$WORK/never.ply"; err_has "$dev"
    expect 2 -- "$PTREG" fpfh "$WORK/scan_n.ply" --device $dev -o "$WORK/never.npy"; err_has "$dev"
    expect 2 -- "$PTREG" pfh "$WORK/scan_n.ply" --device $dev -o "$WORK/never.npy"; err_has "$dev"
    expect 2 -- "$PTREG" lddmm "$WORK/a.csv" "$WORK/b.csv" --device $dev -o "$WORK/never.vtk"; err_has "$dev"
    expect 2 -- "$PTREG" index "$WORK/model.ply" --device $dev -o "$WORK/never.pti"; err_has "$dev"
    expect 2 -- "$PTREG" harris3d "$WORK/none_8x8x8_uint8.raw" --device $dev; err_has "$dev"
done
expect 2 -- "$PTREG" filter "$WORK/scan.ply" --uniform 2 --device opencl -o "$WORK/never.ply"; err_has "CPU only"
expect 2 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --device gpu; err_has "opencl"
no_file "$WORK/never.ply"; no_file "$WORK/never.npy"; no_file "$WORK/never.vtk"; no_file "$WORK/never.pti"

# PTREG_DEVICE stands in for --device auto: a command with a path on that
# kind of device must find it; one without runs on the CPU
PTREG_DEVICE=cuda:5 expect 2 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply"; err_has "PTREG_DEVICE"
PTREG_DEVICE=cuda:5 expect 0 -- "$PTREG" filter "$WORK/scan.ply" --uniform 2 -o "$WORK/scan_env.ply"
PTREG_DEVICE=cuda:5 expect 2 -- "$PTREG" normals "$WORK/scan.ply" -o "$WORK/never.ply"; err_has "PTREG_DEVICE"
PTREG_DEVICE=quantum expect 2 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply"; err_has "PTREG_DEVICE"
PTREG_DEVICE=cpu expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --json; out_has '"device":	"cpu"'
# commands that compute nothing do not read it
PTREG_DEVICE=cuda:5 expect 0 -- "$PTREG" info "$WORK/model.ply"
PTREG_DEVICE=cuda:5 expect 0 -- "$PTREG" convert "$WORK/scan.ply" -o "$WORK/scan.xyz"
# an explicit --device wins over PTREG_DEVICE
PTREG_DEVICE=cuda:5 expect 0 -- "$PTREG" normals "$WORK/scan.ply" --device cpu

# ICP on an OpenCL device, when there is one: the CPU's answer
if has_opencl; then
    # the contraction probe at device open: POCL keeps FP_CONTRACT OFF; a
    # probe kernel made to fuse (the tests' knob) is seen, and said
    expect 0 -- "$PTREG" devices; out_has "bit-exact arithmetic: a\*b+c not fused"
    expect 0 -- "$PTREG" devices --json; out_has '"bit_exact":	true'
    PTREG_DEVICE_PROBE_FUSED=1 expect 0 -- "$PTREG" devices --json
    out_has '"fma_contracts":	true'; out_has '"bit_exact":	false'
    # normals: the CPU's bits (k-NN and radius); tangent-plane refused by name
    for nb in "--k 12" "--radius 0.08"; do
        # shellcheck disable=SC2086
        expect 0 -- "$PTREG" normals "$WORK/scan.ply" $nb --device cpu -o "$WORK/n_cpu.ply"
        # shellcheck disable=SC2086
        expect 0 -- "$PTREG" normals "$WORK/scan.ply" $nb --device opencl:0 --json -o "$WORK/n_dev.ply"
        out_has '"device":	"opencl:0"'
        cmp -s "$WORK/n_cpu.ply" "$WORK/n_dev.ply" || fail "normals $nb: the CPU's and opencl:0's files differ"
    done
    expect 2 -- "$PTREG" normals "$WORK/scan.ply" --orient tangent-plane --device opencl:0 -o "$WORK/never.ply"
    err_has "tangent-plane"; no_file "$WORK/never.ply"
    # convert --voxel: the CPU's points (read in pieces) bit for bit; --device without --voxel refused
    for v in 0.02 0.5; do
        expect 0 -- "$PTREG" convert "$WORK/scan_n.ply" --voxel $v -o "$WORK/v_cpu.ply"
        expect 0 -- "$PTREG" convert "$WORK/scan_n.ply" --voxel $v --device opencl:0 -o "$WORK/v_dev.ply"
        cmp -s "$WORK/v_cpu.ply" "$WORK/v_dev.ply" || fail "convert --voxel $v: the CPU's and opencl:0's files differ"
    done
    expect 2 -- "$PTREG" convert "$WORK/scan.ply" --device opencl:0 -o "$WORK/never.ply"; err_has "only --voxel"
    no_file "$WORK/never.ply"
    for nn in kdtree delaunay-pnnopt; do
        expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --nn $nn --device cpu --json -t "$WORK/T_cpu.txt"
        expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --nn $nn --device opencl:0 --repeat 2 --json \
            -t "$WORK/T_dev.txt" -o "$WORK/moved.ply"
        out_has '"device":	"opencl:0"'; out_has '"model_upload_ms"'; out_has '"times_ms"'; has_file "$WORK/moved.ply"
        checks tables "$WORK/T_cpu.txt" "$WORK/T_dev.txt" 1e-5 --cols 4 --what "icp --nn $nn: CPU and opencl:0"
    done
    expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --device opencl:0 --trim 0.8 --filter-sigma 2
    out_has "on opencl:0"
    # EM-ICP's E-steps and LDDMM's time loop on the device: the CPU's answers
    for p in fp32 fp16 fp64; do
        expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --precision $p --max-iter 20 -t "$WORK/E_cpu.txt"
        expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --precision $p --max-iter 20 \
            --device opencl:0 --json -t "$WORK/E_dev.txt"
        out_has '"device":	"opencl:0"'; out_has '"gpts"'
        checks tables "$WORK/E_cpu.txt" "$WORK/E_dev.txt" 1e-5 --cols 4 --what "emicp $p: CPU and opencl:0"
    done
    printf 'x,y,z\n0,0,0\n1,0,0\n0,1,0\n1,1,0.5\n' >"$WORK/l1.csv"
    printf 'x,y,z\n0.1,0,0\n1.2,0.1,0\n0,1.1,0.1\n1,1.2,0.4\n' >"$WORK/l2.csv"
    for dev in cpu opencl:0; do
        expect 0 -- "$PTREG" lddmm "$WORK/l1.csv" "$WORK/l2.csv" --integrator rk2 --precision fp64 --device $dev \
            -o "$WORK/lddmm_$dev.csv"
        expect 0 -- "$PTREG" warp "$WORK/lddmm_$dev.csv" "$WORK/scan.ply" --device $dev -o "$WORK/warped_$dev.xyz"
    done
    # (after the comment, a header line x,y,z,px,py,pz)
    checks tables "$WORK/lddmm_cpu.csv" "$WORK/lddmm_opencl:0.csv" 1e-6 --skip 1 --cols 6 \
        --what "lddmm's momenta: CPU and opencl:0"
    checks tables "$WORK/warped_cpu.xyz" "$WORK/warped_opencl:0.xyz" 1e-6 --cols 3 --what "warp: CPU and opencl:0"
    # FPFH on the device: the CPU's rows within 0.01; --reference stays on the CPU
    expect 0 -- "$PTREG" fpfh "$WORK/scan_n.ply" --k 20 --device opencl:0 --json -o "$WORK/f_dev.csv"
    out_has '"device":	"opencl:0"'
    expect 0 -- "$PTREG" fpfh "$WORK/scan_n.ply" --k 20 --device cpu -o "$WORK/f_cpu.csv"
    # (a header row f0,...,f32 first)
    checks tables "$WORK/f_cpu.csv" "$WORK/f_dev.csv" 0.01 --skip 1 --cols 33 --what "fpfh: CPU and opencl:0"
    expect 2 -- "$PTREG" pfh "$WORK/scan_n.ply" --reference --device opencl:0; err_has "opencl:0"
fi
finish
