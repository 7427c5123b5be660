# ptreg localize end to end: a prior map in UTM-sized coordinates (synth
# --lidar-map --origin) cut into tiles and saved, a second drive through it
# (--lane, --scan-seed) localized within 5 cm of its truth (ptreg eval), the
# same poses from the saved .ptm and for 1 and 2 threads, --init as X,Y,Z,YAW
# and as a transform file, --json's states and tiles, and bad input: a
# damaged .ptm, a bad --init, no --init.
. "$(dirname "$0")/lib.sh"
numpy_python
O=500000,5400000,100

expect 0 -- "$PTREG" synth --lidar-sequence 40 --beams 16 --azimuth-step 0.8 --frames-dir "$WORK/mapping" \
    --lidar-map "$WORK/map.las" --origin $O
has_file "$WORK/map.las"
mkdir -p "$WORK/drive"
expect 0 -- "$PTREG" synth --lidar-sequence 25 --beams 16 --azimuth-step 0.8 --frames-dir "$WORK/drive" \
    --lane -1.5 --scan-seed 7 --origin $O --truth-trajectory-out "$WORK/truth.txt"
[ "$(wc -l < "$WORK/truth.txt")" -eq 25 ] || fail "the truth is not 25 lines"
# the GNSS fix: the truth's first position, 20 cm off, and its heading
INIT=$("$PY" - "$WORK/truth.txt" <<'EOF'
import math, sys
t, x, y, z, qx, qy, qz, qw = map(float, open(sys.argv[1]).readline().split())
yaw = math.degrees(math.atan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz)))
print(f"{x + 0.2!r},{y - 0.1!r},{z!r},{yaw!r}")
EOF
)
expect 0 -- "$PTREG" localize "$WORK/map.las" --frames "$WORK/drive/velodyne" --init "$INIT" \
    -o "$WORK/poses.txt" --save-tiles "$WORK/map.ptm" --tile 25 --threads 2
out_has "tracked 25, recovered 0, lost 0"
has_file "$WORK/map.ptm"
expect 0 -- "$PTREG" eval "$WORK/poses.txt" "$WORK/truth.txt" --align none --json
"$PY" - "$WORK/out" <<'EOF' || fail "localization's poses are off the truth"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["ate"]["translation"]
assert d["ate"]["pairs"] == 25 and t["rmse"] < 0.05 and t["max"] < 0.1, t
EOF
# the saved tiles, one thread: the same bits
expect 0 -- "$PTREG" localize "$WORK/map.ptm" --frames "$WORK/drive/velodyne" --init "$INIT" \
    -o "$WORK/poses1.txt" --threads 1 --json --map "$WORK/submap.las"
cmp -s "$WORK/poses.txt" "$WORK/poses1.txt" || fail "the .ptm or 1 thread gave other poses"
has_file "$WORK/submap.las"
"$PY" - "$WORK/out" <<'EOF' || fail "--json's frames and summary"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "localize" and len(d["frames"]) == 25, d.keys()
assert all(f["state"] == "tracked" and f["tiles"] > 0 and f["fitness"] > 0.5 for f in d["frames"])
s = d["summary"]
assert s["tracked"] == 25 and s["lost"] == 0 and s["tiles_read"] > 0, s
EOF
# --init as a transform file
"$PY" - "$INIT" "$WORK/init.txt" <<'EOF'
import math, sys
x, y, z, yaw = map(float, sys.argv[1].split(","))
c, s = math.cos(math.radians(yaw)), math.sin(math.radians(yaw))
open(sys.argv[2], "w").write(f"{c!r} {-s!r} 0 {x!r}\n{s!r} {c!r} 0 {y!r}\n0 0 1 {z!r}\n0 0 0 1\n")
EOF
expect 0 -- "$PTREG" localize "$WORK/map.ptm" --frames "$WORK/drive/velodyne" --init "$WORK/init.txt" \
    -o "$WORK/poses2.txt"
expect 0 -- "$PTREG" eval "$WORK/poses2.txt" "$WORK/poses.txt" --align none --json
"$PY" - "$WORK/out" <<'EOF' || fail "--init from a file differs from --init X,Y,Z,YAW"
import json, sys
assert json.load(open(sys.argv[1]))["ate"]["translation"]["max"] < 1e-6
EOF

# bad input
expect 2 -- "$PTREG" localize "$WORK/map.ptm" --frames "$WORK/drive/velodyne"
err_has "give --init"
expect 2 -- "$PTREG" localize "$WORK/map.ptm" --frames "$WORK/drive/velodyne" --init 1,2
err_has "nor X,Y,Z or X,Y,Z,YAW"
expect 2 -- "$PTREG" localize "$WORK/map.ptm" --frames "$WORK/drive/velodyne" --init "$INIT" --tile 10
err_has "tiled already"
head -c 200 "$WORK/map.ptm" > "$WORK/cut.ptm"
expect 3 -- "$PTREG" localize "$WORK/cut.ptm" --frames "$WORK/drive/velodyne" --init "$INIT" -o "$WORK/none.txt"
err_has "cut.ptm: byte"
[ ! -e "$WORK/none.txt" ] || fail "a failed run left a trajectory"
expect 2 -- "$PTREG" localize "$WORK/map.las" --frames "$WORK/drive/velodyne" --init "$INIT" --tile 2.5
err_has "not a whole number of voxels"
finish
