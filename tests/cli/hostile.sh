# Hostile parameters on every command (issue 20): k beyond the cloud, radii
# of 0 and below, NaN and infinities, 10^12 iterations, empty, one-point and
# all-identical clouds, zero-extent volumes, a window larger than the
# volume, landmark sets of different sizes; and (issue 46) multiway, track
# and view, malformed LAS files, convert's --classes and --crop, outputs that
# cannot be written. Each row must exit with its code (2: an option, or an
# output that cannot be written, found before the run; 3: a file) within a
# time bound, print a message that names the option or the file, leave no
# output file and draw no sanitizer report.
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
# multiway, track, view and LAS (issue 46): malformed LAS files (1.2, point
# format 0, a 227-byte header, 20-byte records; docs/FORMATS.md, "LAS"), pairs,
# pose graphs, transforms and frame streams
python3 - "$IN" <<'PY'
import json, struct, sys
w = sys.argv[1]
def put(name, data):
    open(f"{w}/{name}", "wb" if isinstance(data, bytes) else "w").write(data)
def las(n=4, count=None, fmt=0, reclen=20, sig=b"LASF", version=(1, 2), vlr=None, scale=0.01):
    v = b"" if vlr is None else struct.pack("<H16sHH32s", 0, vlr, 22204, 0, b"")  # a VLR's 54-byte header
    h = bytearray(227)
    h[0:4] = sig
    h[24], h[25] = version
    # header size, offset to the points, VLR count, point format, record length, point count
    struct.pack_into("<HIIBHI", h, 94, 227, 227 + len(v), 1 if vlr else 0, fmt, reclen, n if count is None else count)
    struct.pack_into("<3d3d", h, 131, scale, scale, scale, 0, 0, 0)  # scales, offsets
    # x y z (int32), intensity, flags, class 2-4
    recs = b"".join(struct.pack("<3iHBB", 100 * i, -50 * i, 7 * i, 1000, 0, 2 + i % 3).ljust(reclen, b"\0")
                    for i in range(n))
    return bytes(h) + v + recs
put("good.las", las())
put("short_header.las", las()[:100])
put("count_beyond.las", las(count=1000))
put("record_length.las", las(reclen=10))
put("signature.las", las(sig=b"LASX"))
put("laz_bits.las", las(fmt=0x80))
put("laz_vlr.las", las(vlr=b"laszip encoded"))
put("format11.las", las(fmt=11))
put("version2.las", las(version=(2, 0)))
put("scale0.las", las(scale=0.0))
put("badpairs.txt", "0 1\n1 x\n")
put("pairs_beyond.txt", "0 5\n")
put("pairs_self.txt", "1 1\n")
put("graph.txt", "{")
node = {"class_name": "PoseGraphNode", "pose": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1],
        "version_major": 1, "version_minor": 0}
put("graph3.json", json.dumps({"class_name": "PoseGraph", "version_major": 1, "version_minor": 0,
                               "nodes": [node] * 3, "edges": []}))
put("pose1.txt", "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n")
put("T_word.txt", "1 0 0 0\n0 1 x 0\n")
put("T_nine.txt", "1 0 0\n0 1 0\n0 0 1\n")
put("T_nan.txt", "1 0 0 nan\n0 1 0 0\n0 0 1 0\n0 0 0 1\n")
put("T_scale.txt", "2 0 0 0\n0 2 0 0\n0 0 2 0\n0 0 0 1\n")
put("junk.pti", "junk\n")
put("magic.ptf", b"PLY1 not a stream at all")
put("header_cut.ptf", b"PTF1")
put("count_beyond.ptf", b"PTF1" + struct.pack("<Qd", 1 << 40, 0.0) + bytes(12))
PY
mkdir -p "$IN/no_clouds" && echo "not a cloud" >"$IN/no_clouds/readme.md"
"$PTREG" lddmm "$IN/ellipse16.csv" "$IN/circle16.csv" --sigma 0.3 --max-iter 2 -o "$IN/r.vtk" >/dev/null ||
    fail "lddmm"

# row EXIT PARAMETER NEEDLE -- COMMAND ARGS...: one hostile run. NEEDLE must
# appear in the message (an option's name, a file's). Nothing may be left in
# $OUT, nor added to $IN (an output aimed at $IN/scan.ply/x.ply, under a
# file, cannot be written even by root; its temporary file must not stay).
shopt -s dotglob
row() {
    local want=$1 what=$2 needle=$3
    shift 4
    local cmd=$1
    rm -rf "$OUT" && mkdir -p "$OUT"
    local before after
    printf -v before '%s\n' "$IN"/* # no process: with dotglob, a temporary file's name counts too
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
    elif printf -v after '%s\n' "$IN"/* && [ "$after" != "$before" ]; then
        fail "$cmd $what: a file left among the inputs: $(grep -vxF -f <(echo "$before") <<<"$after")"
    elif [ "$took" -gt 20 ]; then
        fail "$cmd $what: ${took}s to refuse"
    fi
    local open='`' close='`'
    case $message in *'`'*) open='`` ' close=' ``' ;; esac # a message that quotes a command line
    printf '| %s | %s | %d | %s%s%s |\n' "$cmd" "$what" "$got" "$open" "$message" "$close" >>"$table"
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

# ---- multiway (issue 46) ----
row 2 "a single scan" "SCAN..." -- multiway "$S" -o "$OUT/p.txt"
row 3 "a missing scan" missing.ply -- multiway "$S" "$IN/missing.ply" -o "$OUT/p.txt"
row 3 "an empty scan" empty.xyz -- multiway "$S" "$IN/empty.xyz" -o "$OUT/p.txt"
row 3 "a one-point scan" one.xyz -- multiway "$IN/one.xyz" "$S" -o "$OUT/p.txt"
row 3 "identical points, a scan" same.xyz -- multiway "$S" "$IN/same.xyz" -o "$OUT/p.txt"
row 3 "a malformed LAS scan" laz_bits.las -- multiway "$S" "$IN/laz_bits.las" -o "$OUT/p.txt"
row 3 "--pairs a missing file" nopairs.txt -- multiway "$S" "$M" --pairs "$IN/nopairs.txt" -o "$OUT/p.txt"
row 3 "--pairs 'x' for a scan" "badpairs.txt: line 2" -- multiway "$S" "$M" --pairs "$IN/badpairs.txt" -o "$OUT/p.txt"
row 3 "--pairs a scan beyond them" "pairs_beyond.txt: line 1" -- multiway "$S" "$M" --pairs "$IN/pairs_beyond.txt" \
    -o "$OUT/p.txt"
row 3 "--pairs a scan with itself" "pairs_self.txt: line 1" -- multiway "$S" "$M" --pairs "$IN/pairs_self.txt" \
    -o "$OUT/p.txt"
row 3 "--pose-graph not JSON" graph.txt -- multiway "$S" "$M" --pose-graph "$IN/graph.txt" -o "$OUT/p.txt"
row 3 "--pose-graph of 3 nodes for 2 scans" graph3.json -- multiway "$S" "$M" --pose-graph "$IN/graph3.json" \
    -o "$OUT/p.txt"
row 3 "--truth of 1 pose for 2 scans" pose1.txt -- multiway "$S" "$M" --truth "$IN/pose1.txt" -o "$OUT/p.txt"
row 3 "--truth a cloud" scan.ply -- multiway "$S" "$M" --truth "$S" -o "$OUT/p.txt"
row 2 "--anchor beyond the scans" --anchor -- multiway "$S" "$M" --anchor 2 -o "$OUT/p.txt"
row 2 "--merged-voxel 0" --merged-voxel -- multiway "$S" "$M" --merged "$OUT/m.ply" --merged-voxel 0
row 2 "--merged-voxel -1" --merged-voxel -- multiway "$S" "$M" --merged "$OUT/m.ply" --merged-voxel -1 -o "$OUT/p.txt"
row 2 "--merged-voxel NaN" --merged-voxel -- multiway "$S" "$M" --merged "$OUT/m.ply" --merged-voxel nan
row 2 "--merged-voxel without --merged" --merged-voxel -- multiway "$S" "$M" --merged-voxel 0.1 -o "$OUT/p.txt"
row 2 "--pair-neighbors -1" --pair-neighbors -- multiway "$S" "$M" --pair-neighbors -1 -o "$OUT/p.txt"
row 2 "--pair-neighbors 10^12" --pair-neighbors -- multiway "$S" "$M" --pair-neighbors 1000000000000
row 2 "--pair-neighbors 0 with --pairs" --pair-neighbors -- multiway "$S" "$M" --pair-neighbors 0 \
    --pairs "$IN/pairs_self.txt" -o "$OUT/p.txt"
row 2 "--pair-neighbors with --pose-graph" --pair-neighbors -- multiway "$S" "$M" --pair-neighbors 1 \
    --pose-graph "$IN/graph3.json"
row 2 "--pairs with --pose-graph" --pairs -- multiway "$S" "$M" --pairs "$IN/pairs_self.txt" \
    --pose-graph "$IN/graph3.json"
row 2 "--voxel 0" --voxel -- multiway "$S" "$M" --voxel 0 -o "$OUT/p.txt"
row 2 "--voxel NaN" --voxel -- multiway "$S" "$M" --voxel nan
row 2 "--voxel inf" --voxel -- multiway "$S" "$M" --voxel inf
row 2 "--refine-dist -1" --refine-dist -- multiway "$S" "$M" --refine-dist -1
row 2 "--refine-iter 0" --refine-iter -- multiway "$S" "$M" --refine-iter 0
row 2 "--min-fitness NaN" --min-fitness -- multiway "$S" "$M" --min-fitness nan
row 2 "--min-fitness 2" --min-fitness -- multiway "$S" "$M" --min-fitness 2
row 2 "--joint-refine 101" --joint-refine -- multiway "$S" "$M" --joint-refine 101
row 2 "--edge-prune-threshold -1" --edge-prune-threshold -- multiway "$S" "$M" --edge-prune-threshold -1
row 2 "--preference-loop-closure 0" --preference-loop-closure -- multiway "$S" "$M" --preference-loop-closure 0
row 2 "--graph-iter 0" --graph-iter -- multiway "$S" "$M" --graph-iter 0
row 2 "--global bogus" --global -- multiway "$S" "$M" --global bogus
row 2 "--threads -1" --threads -- multiway "$S" "$M" --threads -1

# ---- track (issue 46) ----
for v in 0 -1 nan inf; do
    row 2 "--rate $v" --rate -- track "$M" "$S" -o "$OUT/t.txt" --rate "$v"
done
for o in max-rmse max-speed max-turn; do
    for v in 0 -1 nan; do # 0 is the library's "default" or "no bound": not a bound of 0
        row 2 "--$o $v" "--$o" -- track "$M" "$S" -o "$OUT/t.txt" --"$o" "$v"
    done
done
row 2 "--max-speed inf" --max-speed -- track "$M" "$S" -o "$OUT/t.txt" --max-speed inf
row 2 "--min-fitness 2" --min-fitness -- track "$M" "$S" -o "$OUT/t.txt" --min-fitness 2
row 2 "--min-fitness NaN" --min-fitness -- track "$M" "$S" -o "$OUT/t.txt" --min-fitness nan
row 2 "--predict bogus" --predict -- track "$M" "$S" -o "$OUT/t.txt" --predict bogus
row 2 "--kernel without --kernel-scale" --kernel -- track "$M" "$S" -o "$OUT/t.txt" --kernel huber
row 2 "--tol NaN" --tol -- track "$M" "$S" -o "$OUT/t.txt" --tol nan
row 2 "--device bogus" --device -- track "$M" "$S" -o "$OUT/t.txt" --device bogus
row 3 "--init a missing file" noinit.txt -- track "$M" "$S" -o "$OUT/t.txt" --init "$IN/noinit.txt"
row 3 "--init 'x' in the matrix" "T_word.txt: line 2" -- track "$M" "$S" -o "$OUT/t.txt" --init "$IN/T_word.txt"
row 3 "--init of 9 numbers" "T_nine.txt" -- track "$M" "$S" -o "$OUT/t.txt" --init "$IN/T_nine.txt"
row 3 "--init NaN in the matrix" "T_nan.txt: line 1" -- track "$M" "$S" -o "$OUT/t.txt" --init "$IN/T_nan.txt"
row 3 "--init not rigid (scale 2)" T_scale.txt -- track "$M" "$S" -o "$OUT/t.txt" --init "$IN/T_scale.txt"
row 3 "--init a cloud" scan.ply -- track "$M" "$S" -o "$OUT/t.txt" --init "$S"
row 3 "a missing MODEL" nomodel.ply -- track "$IN/nomodel.ply" "$S" -o "$OUT/t.txt"
row 3 "an empty MODEL" empty.xyz -- track "$IN/empty.xyz" "$S" -o "$OUT/t.txt"
row 3 "an empty MODEL (PLY, 0 vertices)" empty.ply -- track "$IN/empty.ply" "$S" -o "$OUT/t.txt"
row 3 "a one-point MODEL" one.xyz -- track "$IN/one.xyz" "$S" -o "$OUT/t.txt"
row 3 "identical points, MODEL" same.xyz -- track "$IN/same.xyz" "$S" -o "$OUT/t.txt"
row 3 "a MODEL index of junk" junk.pti -- track "$IN/junk.pti" "$S" -o "$OUT/t.txt"
row 3 "every frame missing" noframe1.ply -- track "$M" "$IN/noframe1.ply" "$IN/noframe2.ply" -o "$OUT/t.txt" \
    --states "$OUT/s.txt"
row 3 "the one frame empty" empty.xyz -- track "$M" "$IN/empty.xyz" -o "$OUT/t.txt" --states "$OUT/s.txt"
row 3 "the one frame a malformed LAS" count_beyond.las -- track "$M" "$IN/count_beyond.las" -o "$OUT/t.txt"
row 3 "--frames a missing folder" noframes -- track "$M" --frames "$IN/noframes" -o "$OUT/t.txt"
row 3 "--frames a folder of no clouds" no_clouds -- track "$M" --frames "$IN/no_clouds" -o "$OUT/t.txt"
row 2 "no frames" "no frames" -- track "$M" -o "$OUT/t.txt"
row 2 "frame files and --frames" --frames -- track "$M" "$S" --frames "$IN/no_clouds" -o "$OUT/t.txt"
row 2 "'-' among frame files" "'-'" -- track "$M" "$S" - -o "$OUT/t.txt" </dev/null
row 2 "--rate with the stream" --rate -- track "$M" - --rate 5 -o "$OUT/t.txt" </dev/null
row 3 "a stream of no frame" "no frame" -- track "$M" - -o "$OUT/t.txt" --states "$OUT/s.txt" </dev/null
row 3 "a stream without its magic" "PTF1" -- track "$M" - -o "$OUT/t.txt" <"$IN/magic.ptf"
row 3 "a stream's header cut" "frame 0 at byte 0" -- track "$M" - -o "$OUT/t.txt" <"$IN/header_cut.ptf"
row 3 "a stream's count beyond its bytes" "1099511627776" -- track "$M" - -o "$OUT/t.txt" \
    --states "$OUT/s.txt" <"$IN/count_beyond.ptf"

# ---- view (issue 46) ----
row 2 "no -o" -o -- view "$S"
row 2 "--distance with one cloud" --distance -- view "$S" -o "$OUT/v.html" --distance
row 2 "--html-max-points 0" --html-max-points -- view "$S" -o "$OUT/v.html" --html-max-points 0
row 2 "--html-max-points -1" --html-max-points -- view "$S" -o "$OUT/v.html" --html-max-points -1
if html_viewer; then # else view says it was built without the viewer (2) before it reads a file
    row 3 "a missing cloud" missing.ply -- view "$IN/missing.ply" -o "$OUT/v.html"
    row 3 "an empty cloud" empty.xyz -- view "$IN/empty.xyz" -o "$OUT/v.html"
    row 3 "an empty cloud (PLY, 0 vertices)" empty.ply -- view "$S" "$IN/empty.ply" -o "$OUT/v.html"
    row 3 "an empty second cloud, --distance" empty.ply -- view "$S" "$IN/empty.ply" -o "$OUT/v.html" --distance
    row 3 "a malformed LAS" "signature.las: byte 0" -- view "$IN/signature.las" -o "$OUT/v.html"
    row 3 "--transform a missing file" noT.txt -- view "$S" -o "$OUT/v.html" --transform "$IN/noT.txt"
    row 3 "--transform of 9 numbers" T_nine.txt -- view "$S" -o "$OUT/v.html" --transform "$IN/T_nine.txt"
    row 3 "--transform not rigid" T_scale.txt -- view "$S" -o "$OUT/v.html" --transform "$IN/T_scale.txt"
fi

# ---- convert --classes, --crop (issue 46) ----
for v in "" abc 256 6-2 2,,6 -1 "2;6"; do
    row 2 "--classes '$v'" --classes -- convert "$IN/good.las" -o "$O" --classes "$v"
done
for v in 1,0,0,0,1,1 0,0,1,1,1,0 nan,0,0,1,1,1 0,0,0,1,1,inf 0,0,0,1,1 0,0,0,1,1,1,1 a,b,c,d,e,f ""; do
    row 2 "--crop '$v'" --crop -- convert "$S" -o "$O" --crop "$v"
done
row 3 "--crop keeping no point" scan.ply -- convert "$S" -o "$O" --crop 100,100,100,101,101,101
row 3 "--crop keeping no point, --voxel" scan.ply -- convert "$S" -o "$O" --crop 100,100,100,101,101,101 --voxel 0.1
row 3 "--classes of a PLY" scan.ply -- convert "$S" -o "$O" --classes 2
row 3 "--classes keeping no point" good.las -- convert "$IN/good.las" -o "$O" --classes 9
row 3 "--transform a missing file" noT.txt -- convert "$S" -o "$O" --transform "$IN/noT.txt"

# ---- malformed LAS through the CLI (issue 46) ----
row 3 "LAS cut inside its header" "short_header.las: byte 100" -- convert "$IN/short_header.las" -o "$O"
row 3 "LAS count beyond its records" "count_beyond.las: byte 307" -- convert "$IN/count_beyond.las" -o "$O"
row 3 "LAS record length 10 for format 0" "record_length.las: byte 105" -- convert "$IN/record_length.las" -o "$O"
row 3 "LAS signature LASX" "signature.las: byte 0" -- convert "$IN/signature.las" -o "$O"
row 3 "LAZ: compressed bits in the format" "laz_bits.las: byte 104" -- convert "$IN/laz_bits.las" -o "$O"
row 3 "LAZ: LASzip's VLR" "laz_vlr.las: byte 227" -- convert "$IN/laz_vlr.las" -o "$O"
row 3 "LAS point format 11" "format11.las: byte 104" -- convert "$IN/format11.las" -o "$O"
row 3 "LAS version 2.0" "version2.las: byte 24" -- convert "$IN/version2.las" -o "$O"
row 3 "LAS scale factor 0" "scale0.las: byte 131" -- convert "$IN/scale0.las" -o "$O"
row 3 "LAS count beyond, --voxel" "count_beyond.las: byte 307" -- convert "$IN/count_beyond.las" -o "$O" --voxel 0.1
row 3 "LAS cut inside its header" "short_header.las: byte 100" -- info "$IN/short_header.las"
row 3 "LAS count beyond its records" "count_beyond.las: byte 307" -- info "$IN/count_beyond.las"
row 3 "LAS signature LASX" "signature.las: byte 0" -- info "$IN/signature.las"
row 3 "LAZ: compressed bits in the format" "laz_bits.las: byte 104" -- info "$IN/laz_bits.las"
row 3 "LAS point format 11" "format11.las: byte 104" -- info "$IN/format11.las"
row 3 "LAZ as SOURCE" "laz_vlr.las: byte 227" -- icp "$IN/laz_vlr.las" "$M" -o "$O"

# ---- outputs that cannot be written (issues 46, 47): exit 2 before the run, naming
# the output, nothing left; a missing folder, and a folder that is a file (which
# stops root too) ----
NOWHERE=$OUT/no/such/folder
UNDER=$IN/scan.ply
row 2 "-o in a missing folder" "$NOWHERE/o.ply" -- convert "$S" -o "$NOWHERE/o.ply"
row 2 "-o under a file" "$UNDER/o.ply" -- convert "$S" -o "$UNDER/o.ply"
row 2 "-o LAS under a file" "$UNDER/o.las" -- convert "$IN/good.las" -o "$UNDER/o.las"
row 2 "-o in a missing folder" "$NOWHERE/o.ply" -- icp "$S" "$M" -o "$NOWHERE/o.ply"
row 2 "-t under a file, -o fine" "$UNDER/t.txt" -- icp "$S" "$M" -o "$O" -t "$UNDER/t.txt"
row 2 "--html under a file" "$UNDER is not a folder" -- icp "$S" "$M" -o "$O" --html "$UNDER/r.html"
row 2 "-o in a missing folder" "$NOWHERE/n.ply" -- normals "$S" -o "$NOWHERE/n.ply"
row 2 "-o in a missing folder" "$NOWHERE/f.npy" -- fpfh "$M" -o "$NOWHERE/f.npy"
row 2 "-o under a file" "$UNDER/f.npy" -- fpfh "$M" -o "$UNDER/f.npy"
row 2 "-o in a missing folder" "$NOWHERE/p.txt" -- multiway "$S" "$M" -o "$NOWHERE/p.txt"
row 2 "--merged under a file, -o fine" "$UNDER/m.ply" -- multiway "$S" "$M" -o "$OUT/p.txt" --merged "$UNDER/m.ply"
row 2 "--pose-graph-out in a missing folder, -o fine" "$NOWHERE/g.json" -- multiway "$S" "$M" -o "$OUT/p.txt" \
    --pose-graph-out "$NOWHERE/g.json"
row 2 "-o in a missing folder" "$NOWHERE/t.txt" -- track "$M" "$S" -o "$NOWHERE/t.txt"
row 2 "-o under a file" "$UNDER/t.txt" -- track "$M" "$S" -o "$UNDER/t.txt"
row 2 "--states in a missing folder, -o fine" "$NOWHERE/s.txt" -- track "$M" "$S" -o "$OUT/t.txt" \
    --states "$NOWHERE/s.txt"
row 2 "-o in a missing folder" "$NOWHERE/v.html" -- view "$S" -o "$NOWHERE/v.html"
row 2 "-o under a file" "$UNDER/v.html" -- view "$S" -o "$UNDER/v.html"

if [ -n "${HOSTILE_TABLE:-}" ]; then
    cp "$table" "$HOSTILE_TABLE"
fi
echo "$(($(wc -l <"$table") - 2)) hostile runs"
finish
