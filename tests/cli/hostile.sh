# Hostile parameters on every command (issue 20): k beyond the cloud, radii
# of 0 and below, NaN and infinities, 10^12 iterations, empty, one-point and
# all-identical clouds, zero-extent volumes, a window larger than the
# volume, landmark sets of different sizes. Each row must exit with its code
# (2: an option, 3: a file) within a time bound, print a message that names
# the option or the file, leave no output file and draw no sanitizer report.
#
# HOSTILE_TABLE=FILE writes the rows as the Markdown table of
# tests/fuzz/README.md.
. "$(dirname "$0")/lib.sh"

IN=$WORK/inputs
OUT=$WORK/outputs
mkdir -p "$IN" "$OUT"
export PTREG_NUM_THREADS=1
table=$WORK/table.md
printf '| command | parameter | exit | message |\n|---|---|---|---|\n' >"$table"
SECONDS_BOUND=60

"$PTREG" synth --shape aircraft --model "$IN/model.ply" --model-points 1500 -o "$IN/scan.ply" --points 1000 \
    --seed 1 >/dev/null || fail "synth"
"$PTREG" synth --shape apt-polycrystal -o "$IN/al.pos" --grains 2 --box 3 --seed 2 >/dev/null || fail "synth apt"
python3 "$(dirname "$0")/small_inputs.py" "$IN" || fail "small_inputs.py"
python3 - "$IN" <<'PY'
import math, struct, sys
w = sys.argv[1]
def text(name, s):
    open(f"{w}/{name}", "w").write(s)
text("empty.xyz", "")
text("empty.ply", "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\n"
     "property float z\nend_header\n")
text("one.xyz", "0.5 0.25 1\n")
text("same.xyz", "1 2 3\n" * 64)
text("ring64.xyz", "".join("%g %g %g\n" % (math.cos(i), math.sin(1.7 * i), 0.1 * math.cos(0.3 * i)) for i in range(64)))
# volumes: a 4^3 one, and NRRD headers of zero extent
open(f"{w}/tiny_4x4x4_uint8.raw", "wb").write(bytes(range(64)))
open(f"{w}/flat.nrrd", "wb").write(b"NRRD0004\ntype: uint8\ndimension: 3\nsizes: 0 4 4\nencoding: raw\n\n")
open(f"{w}/empty.pos", "wb").write(b"")
open(f"{w}/empty.ptpairs", "wb").write(b"PTPAIRS1" + struct.pack("<QQ", 0, 1) + struct.pack("<Q", 0) + struct.pack("<2Q", 0, 0))
PY
"$PTREG" lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 2 -o "$IN/r.vtk" >/dev/null ||
    fail "lddmm"

# row EXIT PARAMETER NEEDLE -- COMMAND ARGS...: one hostile run. NEEDLE must
# appear in the message (an option's name, a file's).
row() {
    local want=$1 what=$2 needle=$3
    shift 4
    local cmd=$1
    rm -rf "$OUT" && mkdir -p "$OUT"
    local start=$SECONDS
    timeout "$SECONDS_BOUND" "$PTREG" "$@" >"$WORK/out" 2>"$WORK/err"
    local got=$? took=$((SECONDS - start))
    local message
    message=$(grep -m1 "^ptreg" "$WORK/err" | sed "s|$IN/||g; s|$OUT/||g; s/|/\\\\|/g")
    if [ "$got" -eq 124 ]; then
        fail "$cmd $what: no answer in ${SECONDS_BOUND}s: $*"
    elif grep -qE 'Sanitizer|runtime error' "$WORK/err"; then
        fail "$cmd $what: a sanitizer report: $*"
        head -20 "$WORK/err" >&2
    elif [ "$got" -ne "$want" ]; then
        fail "$cmd $what: exit $got (want $want): $*"
        sed 's/^/  stderr: /' "$WORK/err" | head -3 >&2
    elif ! grep -q "^ptreg $cmd: " "$WORK/err"; then
        fail "$cmd $what: no 'ptreg $cmd:' message: $*"
    elif ! grep -qF -- "$needle" "$WORK/err"; then
        fail "$cmd $what: the message does not name '$needle': $(head -1 "$WORK/err")"
    elif [ -n "$(ls -A "$OUT")" ]; then
        fail "$cmd $what: output left: $(ls -A "$OUT")"
    elif [ "$took" -gt 20 ]; then
        fail "$cmd $what: ${took}s to refuse"
    fi
    printf '| %s | %s | %d | `%s` |\n' "$cmd" "$what" "$got" "$message" >>"$table"
}

S=$IN/scan.ply
M=$IN/model.ply
O=$OUT/o.ply

# ---- icp ----
row 2 "--max-iter 10^12" --max-iter -- icp "$S" "$M" -o "$O" --max-iter 1000000000000
row 2 "--max-iter -1" --max-iter -- icp "$S" "$M" -o "$O" --max-iter -1
row 2 "--tol NaN" --tol -- icp "$S" "$M" -o "$O" --tol nan
row 2 "--max-dist 0" --max-dist -- icp "$S" "$M" -o "$O" --max-dist 0
row 2 "--max-dist -1" --max-dist -- icp "$S" "$M" -o "$O" --max-dist -1
row 2 "--max-dist inf" --max-dist -- icp "$S" "$M" -o "$O" --max-dist inf
row 2 "--trim 0" --trim -- icp "$S" "$M" -o "$O" --trim 0
row 2 "--voxel 0" --voxel -- icp "$S" "$M" -o "$O" --voxel 0
row 2 "--voxel -1" --voxel -- icp "$S" "$M" -o "$O" --voxel -1
row 2 "--voxel leaving 1 point" --voxel -- icp "$S" "$M" -o "$O" --voxel 100
row 2 "--normal-k 10^5" --normal-k -- icp "$S" "$M" -o "$O" --method plane --normal-k 100000
row 2 "--normal-k larger than the target" --normal-k -- icp "$S" "$IN/ring64.xyz" -o "$O" --method plane --normal-k 100
row 2 "--normal-k larger than the source" --normal-k -- icp "$IN/ring64.xyz" "$M" -o "$O" --method gicp --normal-k 100
row 2 "--normal-radius -1" --normal-radius -- icp "$S" "$M" -o "$O" --method plane --normal-radius -1
row 2 "--kernel-scale 0" --kernel-scale -- icp "$S" "$M" -o "$O" --kernel huber --kernel-scale 0
row 2 "--lm NaN" --lm -- icp "$S" "$M" -o "$O" --lm nan
row 2 "--filter-sigma -inf" --filter-sigma -- icp "$S" "$M" -o "$O" --filter-sigma -inf
row 2 "--threads 10^9" --threads -- icp "$S" "$M" -o "$O" --threads 1000000000
row 2 "--repeat 0" --repeat -- icp "$S" "$M" -o "$O" --repeat 0
row 3 "empty SOURCE" empty.xyz -- icp "$IN/empty.xyz" "$M" -o "$O"
row 3 "empty TARGET (PLY, 0 vertices)" empty.ply -- icp "$S" "$IN/empty.ply" -o "$O"
row 3 "one-point SOURCE" one.xyz -- icp "$IN/one.xyz" "$M" -o "$O"
row 3 "one-point TARGET" one.xyz -- icp "$S" "$IN/one.xyz" -o "$O"
row 3 "identical points, SOURCE" same.xyz -- icp "$IN/same.xyz" "$M" -o "$O"
row 3 "identical points, TARGET" same.xyz -- icp "$S" "$IN/same.xyz" -o "$O"
row 3 "identical points, TARGET, plane" same.xyz -- icp "$S" "$IN/same.xyz" -o "$O" --method plane
row 3 "identical points, TARGET, gicp" same.xyz -- icp "$S" "$IN/same.xyz" -o "$O" --method gicp

# ---- register ----
row 2 "--voxel 0" --voxel -- register "$S" "$M" -o "$O" --voxel 0
row 2 "--voxel NaN" --voxel -- register "$S" "$M" -o "$O" --voxel nan
row 2 "--voxel leaving 1 point" "voxel 100" -- register "$S" "$M" -o "$O" --voxel 100
row 2 "--ransac-iter 10^12" --ransac-iter -- register "$S" "$M" -o "$O" --ransac-iter 1000000000000
row 2 "--confidence 1.5" --confidence -- register "$S" "$M" -o "$O" --confidence 1.5
row 2 "--ransac-dist -1" --ransac-dist -- register "$S" "$M" -o "$O" --ransac-dist -1
row 3 "empty SOURCE" empty.xyz -- register "$IN/empty.xyz" "$M" -o "$O"
row 3 "one-point TARGET" one.xyz -- register "$S" "$IN/one.xyz" -o "$O"
row 3 "identical points, SOURCE" same.xyz -- register "$IN/same.xyz" "$M" -o "$O"

# ---- emicp ----
row 2 "--sigma2 0" --sigma2 -- emicp "$S" "$M" -o "$O" --sigma2 0
row 2 "--sigma2 -1" --sigma2 -- emicp "$S" "$M" -o "$O" --sigma2 -1
row 2 "--sigma-factor 1" --sigma-factor -- emicp "$S" "$M" -o "$O" --sigma-factor 1
row 2 "--d02 NaN" --d02 -- emicp "$S" "$M" -o "$O" --d02 nan
row 2 "--max-iter 10^12" --max-iter -- emicp "$S" "$M" -o "$O" --max-iter 1000000000000
row 2 "--tile 0" --tile -- emicp "$S" "$M" -o "$O" --tile 0
row 3 "empty TARGET" empty.xyz -- emicp "$S" "$IN/empty.xyz" -o "$O"
row 3 "one-point SOURCE" one.xyz -- emicp "$IN/one.xyz" "$M" -o "$O"
row 3 "identical points, TARGET" same.xyz -- emicp "$S" "$IN/same.xyz" -o "$O"

# ---- normals, pfh, fpfh ----
row 2 "--k 0" --k -- normals "$S" -o "$O" --k 0
row 2 "--k larger than the cloud" --k -- normals "$S" -o "$O" --k 100000
row 2 "--radius 0" --radius -- normals "$S" -o "$O" --radius 0
row 2 "--radius -1" --radius -- normals "$S" -o "$O" --radius -1
row 2 "--viewpoint NaN" --viewpoint -- normals "$S" -o "$O" --viewpoint nan,0,0
row 3 "empty cloud" empty.xyz -- normals "$IN/empty.xyz" -o "$O"
row 3 "one-point cloud" one.xyz -- normals "$IN/one.xyz" -o "$O"
row 3 "identical points" same.xyz -- normals "$IN/same.xyz" -o "$O"
row 2 "--k larger than the cloud" --k -- pfh "$S" -o "$OUT/p.npy" --k 100000
row 2 "--radius -1" --radius -- pfh "$S" -o "$OUT/p.npy" --radius -1
row 2 "--normal-radius 0" --normal-radius -- pfh "$S" -o "$OUT/p.npy" --normal-radius 0
row 3 "one-point cloud" one.xyz -- pfh "$IN/one.xyz" -o "$OUT/p.npy"
row 3 "identical points" same.xyz -- pfh "$IN/same.xyz" -o "$OUT/p.npy"
row 2 "--k larger than the cloud" --k -- fpfh "$S" -o "$OUT/f.npy" --k 100000
row 2 "--radius 0" --radius -- fpfh "$S" -o "$OUT/f.npy" --radius 0
row 2 "--normal-k 0" --normal-k -- fpfh "$S" -o "$OUT/f.npy" --normal-k 0
row 3 "empty cloud (PLY)" empty.ply -- fpfh "$IN/empty.ply" -o "$OUT/f.npy"
row 3 "one-point cloud" one.xyz -- fpfh "$IN/one.xyz" -o "$OUT/f.npy"
row 3 "identical points" same.xyz -- fpfh "$IN/same.xyz" -o "$OUT/f.npy"

# ---- harris3d ----
V=$IN/box_24x24x24_uint8.raw
row 2 "--window 4 (even)" --window -- harris3d "$V" -o "$OUT/k.csv" --window 4
row 2 "--window 33" --window -- harris3d "$V" -o "$OUT/k.csv" --window 33
row 2 "--window larger than the volume" --window -- harris3d "$IN/tiny_4x4x4_uint8.raw" -o "$OUT/k.csv" --window 9
row 2 "--sigma 0" --sigma -- harris3d "$V" -o "$OUT/k.csv" --sigma 0
row 2 "--k NaN" --k -- harris3d "$V" -o "$OUT/k.csv" --k nan
row 2 "--threshold inf" --threshold -- harris3d "$V" -o "$OUT/k.csv" --threshold inf
row 2 "--top -1" --top -- harris3d "$V" -o "$OUT/k.csv" --top -1
row 2 "--min-distance -1" --min-distance -- harris3d "$V" -o "$OUT/k.csv" --min-distance -1
row 2 "--dims 0,24,24 (zero extent)" --dims -- harris3d "$V" -o "$OUT/k.csv" --dims 0,24,24 --type u8
row 2 "--spacing 0,1,1" --spacing -- harris3d "$V" -o "$OUT/k.csv" --spacing 0,1,1
row 3 "NRRD of zero extent" flat.nrrd -- harris3d "$IN/flat.nrrd" -o "$OUT/k.csv"

# ---- lddmm, warp ----
E=$IN/ellipse16.csv
C=$IN/circle16.csv
row 3 "landmark sets of 16 and 15" circle15.csv -- lddmm "$E" "$IN/circle15.csv" -o "$OUT/r.vtk"
row 3 "empty TARGET" empty.xyz -- lddmm "$E" "$IN/empty.xyz" -o "$OUT/r.vtk"
row 2 "--sigma 0" --sigma -- lddmm "$E" "$C" -o "$OUT/r.vtk" --sigma 0
row 2 "--sigma NaN" --sigma -- lddmm "$E" "$C" -o "$OUT/r.vtk" --sigma nan
row 2 "--steps 1" --steps -- lddmm "$E" "$C" -o "$OUT/r.vtk" --steps 1
row 2 "--steps 10^12" --steps -- lddmm "$E" "$C" -o "$OUT/r.vtk" --steps 1000000000000
row 2 "--max-iter 10^12" --max-iter -- lddmm "$E" "$C" -o "$OUT/r.vtk" --max-iter 1000000000000
row 2 "--lambda -1" --lambda -- lddmm "$E" "$C" -o "$OUT/r.vtk" --lambda -1
row 2 "--gtol inf" --gtol -- lddmm "$E" "$C" -o "$OUT/r.vtk" --gtol inf
row 3 "empty cloud to warp" empty.xyz -- warp "$IN/r.vtk" "$IN/empty.xyz" -o "$O"
row 3 "a cloud as the result" scan.ply -- warp "$S" "$E" -o "$O"

# ---- batch ----
P=$IN/al.pos
row 2 "--k 2" --k -- batch "$P" -o "$OUT/o.npy" --k 2
row 2 "--k 10^6" --k -- batch "$P" -o "$OUT/o.npy" --k 1000000
row 2 "--radius 0" --radius -- batch "$P" -o "$OUT/o.npy" --radius 0
row 2 "--radius -1" --radius -- batch "$P" -o "$OUT/o.npy" --radius -1
row 2 "--max-iter 10^12" --max-iter -- batch "$P" -o "$OUT/o.npy" --max-iter 1000000000000
row 2 "--sigma-factor 1" --sigma-factor -- batch "$P" -o "$OUT/o.npy" --sigma-factor 1
row 2 "--grain-radius -1" --grain-radius -- batch "$P" -o "$OUT/o.npy" --grain-radius -1
row 2 "--min-matched 2" --min-matched -- batch "$P" -o "$OUT/o.npy" --min-matched 2
row 2 "--lattice 0" --lattice -- batch "$P" -o "$OUT/o.npy" --lattice 0
row 2 "--k larger than the atoms" --k -- batch "$IN/one.xyz" -o "$OUT/o.npy" --k 12
row 3 "empty .pos" empty.pos -- batch "$IN/empty.pos" -o "$OUT/o.npy"
row 3 "pairs file of no pairs" empty.ptpairs -- batch --pairs "$IN/empty.ptpairs" -o "$OUT/o.npy"

# ---- index ----
row 2 "--leaf-size 0" --leaf-size -- index "$M" -o "$OUT/m.pti" --leaf-size 0
row 2 "--tune-repeat 0" --tune-repeat -- index "$M" -o "$OUT/m.pti" --tune --tune-repeat 0
row 3 "empty cloud" empty.xyz -- index "$IN/empty.xyz" -o "$OUT/m.pti"
row 3 "one-point cloud" one.xyz -- index "$IN/one.xyz" -o "$OUT/m.pti"
row 3 "identical points" same.xyz -- index "$IN/same.xyz" -o "$OUT/m.pti"

# ---- synth ----
row 2 "--points 0" --points -- synth -o "$O" --points 0
row 2 "--points 10^12" --points -- synth -o "$O" --points 1000000000000
row 2 "--noise NaN" --noise -- synth -o "$O" --noise nan
row 2 "--overlap 0" --overlap -- synth -o "$O" --overlap 0
row 2 "--outliers 2" --outliers -- synth -o "$O" --outliers 2
row 2 "--view 0,0,0" view -- synth -o "$O" --view 0,0,0
row 2 "--grains 0" --grains -- synth --shape apt-polycrystal -o "$OUT/a.pos" --grains 0
row 2 "--box 0" --box -- synth --shape apt-polycrystal -o "$OUT/a.pos" --box 0
row 2 "--box 10^9 (too many atoms)" box -- synth --shape apt-polycrystal -o "$OUT/a.pos" --box 1000000000

# ---- convert, info ----
row 2 "--voxel 0" --voxel -- convert "$S" -o "$O" --voxel 0
row 2 "--voxel inf" --voxel -- convert "$S" -o "$O" --voxel inf
row 3 "empty cloud" empty.xyz -- convert "$IN/empty.xyz" -o "$O"
row 3 "a cloud as --transform" scan.ply -- convert "$S" -o "$O" --transform "$S"
row 3 "empty cloud" empty.ply -- info "$IN/empty.ply"

# ---- tune, devices ----
row 2 "--size 0" --size -- tune --size 0 --no-save
row 2 "--size 10^12" --size -- tune --size 1000000000000 --no-save
row 2 "--sample 0" --sample -- tune --sample 0 --no-save
row 2 "--reps 0" --reps -- tune --reps 0 --no-save
row 2 "--budget -1" --budget -- tune --budget -1 --no-save
row 2 "--budget NaN" --budget -- tune --budget nan --no-save
row 2 "an argument it does not take" extra -- devices extra

if [ -n "${HOSTILE_TABLE:-}" ]; then
    cp "$table" "$HOSTILE_TABLE"
fi
echo "$(($(wc -l <"$table") - 2)) hostile runs"
finish
