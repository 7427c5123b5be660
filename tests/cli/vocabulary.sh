# One name per idea in every command (tests/vocabulary.py has the rules);
# the former spellings still work, with a note; -q and --device wherever a
# command computes, and PTREG_DEVICE a preference that falls back to the CPU
# where a command or step has no path on that device.
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

expect 0 -- python3 "$root/tests/vocabulary.py" "$PTREG"; out_has "0 breaches"; out_has "register   --fgr-iter --ransac-iter --refine-iter"

# the rules catch a breach: a ptreg whose help spells iterations the old way
cat >"$WORK/old-ptreg" <<FAKE
#!/bin/bash
"$PTREG" "\$@" | sed -e 's/--fgr-iter /--fgr-iterations /' -e 's/-q, --quiet/    --quiet/'
FAKE
chmod +x "$WORK/old-ptreg"
expect 1 -- python3 "$root/tests/vocabulary.py" "$WORK/old-ptreg"
err_has "register --fgr-iterations: iterations are --max-iter"; err_has "register --quiet: -q is its short name"

# former names: taken, with a note naming the new one
expect 0 -- "$PTREG" synth --model "$WORK/m.ply" -o "$WORK/s.ply" --points 8000 --model-points 10000 \
    --truth "$WORK/t.txt" --seed 2
err_has "note: --truth is now --truth-out"; has_file "$WORK/t.txt"
expect 0 -- "$PTREG" synth --model "$WORK/m.ply" -o "$WORK/s.ply" --points 8000 --model-points 10000 \
    --truth-out "$WORK/t2.txt" --seed 2
[ -s "$WORK/err" ] && fail "synth --truth-out printed on stderr: $(cat "$WORK/err")"
cmp -s "$WORK/t.txt" "$WORK/t2.txt" || fail "synth --truth and --truth-out wrote different truths"
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --global fgr --fgr-iterations 8 --json
err_has "note: --fgr-iterations is now --fgr-iter"
expect 2 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --fgr-iterations 0; err_has "--fgr-iter"
expect 2 -- "$PTREG" view "$WORK/s.ply" -o "$WORK/v.html" --max-points 0
err_has "note: --max-points is now --html-max-points"
expect 0 -- "$PTREG" help harris3d; out_has "--kappa K"

# -q keeps stderr to errors: a cloud with a NaN point, whose drop is a note
printf '0 0 0\n1 0 0\n0 1 0\n0 0 1\nnan 0 0\n1 1 0\n' >"$WORK/nan.xyz"
expect 0 -- "$PTREG" normals "$WORK/nan.xyz" --k 4 -o "$WORK/n.ply"; err_has "non-finite"
expect 0 -- "$PTREG" normals "$WORK/nan.xyz" --k 4 -q -o "$WORK/n.ply"
[ -s "$WORK/err" ] && fail "normals -q printed on stderr: $(cat "$WORK/err")"

# devices: multiway runs on the CPU: --device cpu and auto are taken, a GPU
# named is exit 2 naming the command, PTREG_DEVICE falls back (its pairs'
# registrations too). register has a GPU path (its matches, RANSAC and
# refinement; the CPU's answers: device_icp_methods.sh): under PTREG_DEVICE
# it runs there, as icp does
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --device cpu --json -q
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" -t "$WORK/T_cpu.txt"
expect 0 -- "$PTREG" multiway "$WORK/s.ply" "$WORK/m.ply" -o "$WORK/P_cpu.txt"
for dev in opencl cuda:0; do
    expect 2 -- "$PTREG" multiway "$WORK/s.ply" "$WORK/m.ply" --device $dev -o "$WORK/never.txt"
    err_has "multiway has no"
    PTREG_DEVICE=$dev expect 0 -- "$PTREG" multiway "$WORK/s.ply" "$WORK/m.ply" -o "$WORK/P_env.txt"
    cmp -s "$WORK/P_cpu.txt" "$WORK/P_env.txt" || fail "multiway under PTREG_DEVICE=$dev gave other poses"
done
no_file "$WORK/never.txt"
if has_opencl; then
    PTREG_DEVICE=opencl expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --json -t "$WORK/T_env.txt"
    out_has '"device":	"opencl:0"'
    checks tables "$WORK/T_cpu.txt" "$WORK/T_env.txt" 1e-6 --cols 4 --what "register under PTREG_DEVICE=opencl"
fi
# normals' tangent-plane orientation has no device path: PTREG_DEVICE=opencl falls back to
# the CPU for it, --device opencl refuses it by name
if has_opencl; then
    PTREG_DEVICE=opencl expect 0 -- "$PTREG" normals "$WORK/s.ply" --orient tangent-plane -o "$WORK/n_env.ply"
    expect 0 -- "$PTREG" normals "$WORK/s.ply" --orient tangent-plane --device cpu -o "$WORK/n_cpu.ply"
    cmp -s "$WORK/n_env.ply" "$WORK/n_cpu.ply" || fail "normals under PTREG_DEVICE gave other normals than the CPU"
    expect 2 -- "$PTREG" normals "$WORK/s.ply" --orient tangent-plane --device opencl -o "$WORK/never.ply"
    err_has "tangent-plane"; no_file "$WORK/never.ply"
fi
finish
