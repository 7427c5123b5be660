# ptreg synth --lidar-sequence and ptreg odometry end to end: the drive in
# KITTI's layout, its poses recovered within bounds (ptreg eval), TUM and
# KITTI output, the same bits for 1 and 2 threads and from the PTF1 stream,
# the map, --json's numbers, and bad frames skipped (a .bin cut short, NaN
# coordinates) without ending the run.
. "$(dirname "$0")/lib.sh"
numpy_python
SEQ="$WORK/seq"

expect 0 -- "$PTREG" synth --lidar-sequence 24 --beams 32 --azimuth-step 0.4 --frames-dir "$SEQ" --seed 3
out_has "24 frames of 32 beams"
[ "$(find "$SEQ/velodyne" -name '*.bin' | wc -l)" -eq 24 ] || fail "not 24 .bin frames"
[ "$(wc -l < "$SEQ/poses.txt")" -eq 24 ] || fail "poses.txt is not 24 lines"
[ "$(wc -l < "$SEQ/times.txt")" -eq 24 ] || fail "times.txt is not 24 lines"
grep -q "^Tr: 1" "$SEQ/calib.txt" || fail "calib.txt has no identity Tr"
# the same seed, the same bytes (a frame made again)
expect 0 -- "$PTREG" synth --lidar-sequence 3 --beams 32 --azimuth-step 0.4 --frames-dir "$WORK/again" --seed 3
cmp -s "$SEQ/velodyne/000002.bin" "$WORK/again/velodyne/000002.bin" || fail "the same seed gave other bytes"

# odometry: KITTI poses within 3.5% of the 23 m driven (most of it the first
# frame's, registered from a standstill, as KISS-ICP's) and a degree of the truth
expect 0 -- "$PTREG" odometry --frames "$SEQ/velodyne" -o "$WORK/kitti.txt" --poses kitti --threads 2
out_has "24 frames (0 skipped"
expect 0 -- "$PTREG" eval "$WORK/kitti.txt" "$SEQ/poses.txt" --align none --json
"$PY" - "$WORK/out" <<'EOF' || fail "odometry's poses are off the truth"
import json, sys
d = json.load(open(sys.argv[1]))
t, r = d["ate"]["translation"]["max"], d["ate"]["rotation_deg"]["max"]
assert t < 0.8 and r < 1.0, (t, r)
EOF
# one thread: the same bits; the TUM trajectory has the same poses
expect 0 -- "$PTREG" odometry --frames "$SEQ/velodyne" -o "$WORK/kitti1.txt" --poses kitti --threads 1
cmp -s "$WORK/kitti.txt" "$WORK/kitti1.txt" || fail "1 and 2 threads gave other poses"
expect 0 -- "$PTREG" odometry "$SEQ"/velodyne/*.bin -o "$WORK/tum.txt" --map "$WORK/map.ply" --json -q
[ "$(wc -l < "$WORK/tum.txt")" -eq 24 ] || fail "the TUM trajectory is not 24 lines"
has_file "$WORK/map.ply"
expect 0 -- "$PTREG" eval "$WORK/tum.txt" "$WORK/kitti.txt" --associate index --align none --json
"$PY" - "$WORK/out" <<'EOF' || fail "TUM and KITTI outputs differ"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ate"]["translation"]["max"] < 1e-6, d["ate"]["translation"]
EOF

# the PTF1 stream: the same poses
"$PY" - "$SEQ/velodyne" "$WORK/frames.ptf" <<'EOF' || fail "no stream made"
import os, struct, sys
import numpy as np
src, dst = sys.argv[1:3]
with open(dst, "wb") as f:
    for k, name in enumerate(sorted(os.listdir(src))):
        p = np.fromfile(os.path.join(src, name), dtype="<f4").reshape(-1, 4)[:, :3]
        f.write(b"PTF1" + struct.pack("<Qd", len(p), k / 10.0) + p.astype("<f4").tobytes())
EOF
expect 0 -- "$PTREG" odometry - -o "$WORK/stream.txt" --poses kitti < "$WORK/frames.ptf"
cmp -s "$WORK/kitti.txt" "$WORK/stream.txt" || fail "the stream gave other poses than the files"

# bad frames are skipped, named, and the run goes on: a .bin cut short, NaN
mkdir -p "$WORK/bad"
cp "$SEQ"/velodyne/00000[0-5].bin "$WORK/bad/"
head -c 1000 "$SEQ/velodyne/000006.bin" > "$WORK/bad/000006.bin"
"$PY" - "$SEQ/velodyne/000007.bin" "$WORK/bad/000007.bin" <<'EOF'
import sys
import numpy as np
p = np.fromfile(sys.argv[1], dtype="<f4").reshape(-1, 4)
p[5, 1] = np.nan
p.tofile(sys.argv[2])
EOF
cp "$SEQ"/velodyne/00000[89].bin "$WORK/bad/"
expect 0 -- "$PTREG" odometry --frames "$WORK/bad" -o "$WORK/bad.txt" --poses kitti
err_has "000006.bin: byte 992"
err_has "000007.bin: 1 points have non-finite coordinates; the frame is skipped"
out_has "8 frames (2 skipped"
[ "$(wc -l < "$WORK/bad.txt")" -eq 8 ] || fail "the skipped frames have lines"

# bad options and inputs: usage 2, input 3, no partial output
expect 2 -- "$PTREG" odometry --frames "$SEQ/velodyne" --poses euroc -o "$WORK/never.txt"
err_has "--poses: 'euroc' is not tum or kitti"
expect 2 -- "$PTREG" odometry --frames "$SEQ/velodyne" --min-range 50 --max-range 40 -o "$WORK/never.txt"
err_has "min-range 50 is not below --max-range 40"
expect 2 -- "$PTREG" odometry --frames "$SEQ/velodyne" --map-whole -o "$WORK/never.txt"
expect 2 -- "$PTREG" odometry --frames "$SEQ/velodyne" --device cuda -o "$WORK/never.txt"
expect 2 -- "$PTREG" synth --lidar-sequence 5 --beams 0 --frames-dir "$WORK/never"
expect 2 -- "$PTREG" synth --lidar-sequence 5
expect 2 -- "$PTREG" synth --beams 16 -o "$WORK/never.ply"
mkdir -p "$WORK/none"
head -c 17 "$SEQ/velodyne/000000.bin" > "$WORK/none/000000.bin"
expect 3 -- "$PTREG" odometry --frames "$WORK/none" -o "$WORK/never.txt"
err_has "no frame could be read"
no_file "$WORK/never.txt"
# --calib: the poses in the camera frame of calib.txt's Tr (Tr P Tr^-1), as KITTI's poses.txt
printf 'P0: 0 0 0 0 0 0 0 0 0 0 0 0\nTr: 0 -1 0 0.1 0 0 -1 -0.2 1 0 0 -0.3\n' > "$WORK/calib.txt"
expect 0 -- "$PTREG" odometry --frames "$SEQ/velodyne" -o "$WORK/cam.txt" --poses kitti --calib "$WORK/calib.txt"
"$PY" - "$WORK/kitti.txt" "$WORK/cam.txt" <<'EOF' || fail "--calib's poses are not Tr P Tr^-1"
import sys
import numpy as np
def poses(path):
    a = np.loadtxt(path).reshape(-1, 3, 4)
    return np.concatenate([a, np.tile([[[0, 0, 0, 1]]], (len(a), 1, 1))], axis=1)
tr = np.array([[0, -1, 0, 0.1], [0, 0, -1, -0.2], [1, 0, 0, -0.3], [0, 0, 0, 1]])
v, c = poses(sys.argv[1]), poses(sys.argv[2])
assert np.abs(tr @ v @ np.linalg.inv(tr) - c).max() < 1e-6
EOF
printf 'P0: 0 0 0\nTr: 1 0 0 0 0 2 0 0 0 0 1 0\n' > "$WORK/badcalib.txt"
expect 3 -- "$PTREG" odometry --frames "$SEQ/velodyne" -o "$WORK/x.txt" --calib "$WORK/badcalib.txt"
err_has "badcalib.txt: line 2"
printf 'P0: 0 0 0\n' > "$WORK/nocalib.txt"
expect 3 -- "$PTREG" odometry --frames "$SEQ/velodyne" -o "$WORK/x.txt" --calib "$WORK/nocalib.txt"
err_has "no 'Tr:' line"

# a pose file whose row is not rigid: eval names the file and the line
sed '3s/^[^ ]*/2.0/' "$SEQ/poses.txt" > "$WORK/nonrigid.txt"
expect 3 -- "$PTREG" eval "$WORK/kitti.txt" "$WORK/nonrigid.txt"
err_has "nonrigid.txt: line 3"
finish
