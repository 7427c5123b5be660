#!/bin/bash
# Georeferenced clouds (issue 30): UTM-placed points through convert (PLY,
# PCD, XYZ, LAS), ICP from the identity and convert --transform come back
# within 1 mm in world coordinates; the real LiDAR pair registered at UTM
# coordinates and near zero gives the same pose; info reports the world's
# numbers and the origin; the transform files are the world's.
. "$(dirname "$0")/lib.sh"
numpy_python

# 20,000 points of a 300 m x 300 m patch at easting 500,000, northing
# 4,500,000, to the millimetre; written as double PLY and as text
"$PY" - "$WORK" <<'PYEOF'
import sys
import numpy as np
work = sys.argv[1]
rng = np.random.default_rng(7)
n = 20000
x = rng.uniform(0, 300, n)
y = rng.uniform(0, 300, n)
z = 250 + 5 * np.sin(x / 30) + 3 * np.cos(y / 20)
w = np.round(np.c_[x + 500000.123, y + 4500000.456, z], 3)
np.save(work + "/w.npy", w)
with open(work + "/utm.ply", "wb") as f:
    f.write(b"ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % n)
    f.write(b"property double x\nproperty double y\nproperty double z\nend_header\n")
    f.write(w.astype("<f8").tobytes())
np.savetxt(work + "/utm.xyz", w, fmt="%.3f")
PYEOF

# world points of FILE (any format ptreg writes) against w.npy moved by T
check_world() { # file, what, [4x4 text file moving w]
    "$PY" - "$WORK" "$1" "$2" "${3:-}" <<'PYEOF' || fail "$2"
import sys, struct
import numpy as np
work, path, what, tpath = sys.argv[1:5]
w = np.load(work + "/w.npy")
if tpath:
    T = np.loadtxt(tpath)
    w = w @ T[:3, :3].T + T[:3, 3]
def read_ply_or_pcd(path):
    data = open(path, "rb").read()
    end = data.index(b"end_header\n") + 11 if path.endswith(".ply") else data.index(b"DATA binary\n") + 12
    head = data[:end].decode()
    dt = "<f8" if ("property double x" in head or "SIZE 8 8 8" in head) else "<f4"
    n = int(head.split("element vertex ")[1].split()[0]) if path.endswith(".ply") else int(head.split("POINTS ")[1].split()[0])
    rec = np.frombuffer(data[end:], dtype=np.uint8).reshape(n, -1)
    return np.frombuffer(rec[:, :3 * np.dtype(dt).itemsize].tobytes(), dtype=dt).reshape(n, 3).astype(np.float64)
def read_las(path):
    data = open(path, "rb").read()
    off, = struct.unpack_from("<I", data, 96)
    fmt, rlen, n = struct.unpack_from("<BHI", data, 104)
    sc = struct.unpack_from("<3d", data, 131)
    of = struct.unpack_from("<3d", data, 155)
    rec = np.frombuffer(data[off:off + n * rlen], dtype=np.uint8).reshape(n, rlen)
    xyz = np.frombuffer(rec[:, :12].tobytes(), dtype="<i4").reshape(n, 3).astype(np.float64)
    return xyz * np.array(sc) + np.array(of)
if path.endswith(".las"):
    p = read_las(path)
elif path.endswith((".ply", ".pcd")):
    p = read_ply_or_pcd(path)
else:
    p = np.loadtxt(path)
err = np.abs(p - w).max() if p.shape == w.shape else float("inf")
if not err <= 1e-3:
    sys.exit("%s: %d points, worst %.6g m off" % (what, len(p), err))
PYEOF
}

# info: the world's bounds, and the origin the reader chose
expect 0 -- "$PTREG" info "$WORK/utm.ply" --json
out_has '"origin":'
"$PY" - "$WORK/out" "$WORK/w.npy" <<'PYEOF' || fail "info's bounds are not the world's"
import json, sys
import numpy as np
o = json.load(open(sys.argv[1]))
w = np.load(sys.argv[2])
assert np.abs(np.array(o["min"]) - w.min(0)).max() < 1e-3, o["min"]
assert np.abs(np.array(o["max"]) - w.max(0)).max() < 1e-3, o["max"]
assert o["origin"][0] > 499000 and o["origin"][1] > 4499000 and o["origin"][2] == 0, o["origin"]
PYEOF
expect 0 -- "$PTREG" info "$WORK/utm.xyz"
out_has "origin   5"

# convert through every writer: the world to the millimetre
for ext in ply pcd xyz las; do
    expect 0 -- "$PTREG" convert "$WORK/utm.ply" -o "$WORK/c.$ext"
    check_world "$WORK/c.$ext" "convert to $ext"
done
expect 0 -- "$PTREG" convert "$WORK/utm.xyz" -o "$WORK/x.ply"
check_world "$WORK/x.ply" "text to PLY"

# ICP from the identity onto itself: the points stay, the transform is the identity
printf '1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n' >"$WORK/I.txt"
expect 0 -- "$PTREG" icp "$WORK/utm.ply" "$WORK/c.pcd" --init "$WORK/I.txt" -o "$WORK/moved.ply" \
    -t "$WORK/T.txt" --max-iter 5
check_world "$WORK/moved.ply" "icp from the identity"
check_world "$WORK/moved.ply" "icp's transform file is the world's" "$WORK/T.txt"

# a world transform: a 2 degree turn about a point of the patch
"$PY" - "$WORK/R.txt" <<'PYEOF'
import sys
import numpy as np
a = np.radians(2.0)
R = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
c = np.array([500150.0, 4500150.0, 250.0])
T = np.eye(4)
T[:3, :3] = R
T[:3, 3] = c - R @ c + np.array([1.5, -2.25, 0.5])
np.savetxt(sys.argv[1], T, fmt="%.17g")
PYEOF
expect 0 -- "$PTREG" convert "$WORK/utm.ply" --transform "$WORK/R.txt" -o "$WORK/turned.ply"
check_world "$WORK/turned.ply" "convert --transform in the world" "$WORK/R.txt"

# the real LiDAR pair at UTM coordinates and near zero: the same pose
if has_data; then
    "$PY" - "$DATA/lidar" "$WORK" <<'PYEOF'
import sys
import numpy as np
src, work = sys.argv[1:3]
S = np.array([500000.123, 4500000.456, 100.0])
def read_xyz(path):
    data = open(path, "rb").read()
    end = data.index(b"end_header\n") + 11
    head = data[:end].decode().split("\n")
    n = int([l for l in head if l.startswith("element vertex")][0].split()[2])
    props = [l.split() for l in head if l.startswith("property")]
    size = {"float": 4, "double": 8, "uchar": 1, "ushort": 2, "uint": 4, "int": 4, "short": 2, "char": 1}
    names = [(p[2], "<f4" if p[1] == "float" else "<f8" if p[1] == "double" else "<u%d" % size[p[1]]) for p in props]
    rec = np.frombuffer(data[end:end + n * sum(size[p[1]] for p in props)], dtype=np.dtype(names))
    return np.c_[rec["x"], rec["y"], rec["z"]].astype(np.float64)
for name in ("source", "target"):
    p = read_xyz("%s/%s.ply" % (src, name))
    for tag, off in (("near", np.zeros(3)), ("utm", S)):
        q = p + off
        with open("%s/%s_%s.ply" % (work, name, tag), "wb") as f:
            f.write(b"ply\nformat binary_little_endian 1.0\nelement vertex %d\n" % len(q))
            f.write(b"property double x\nproperty double y\nproperty double z\nend_header\n")
            f.write(q.astype("<f8").tobytes())
np.save(work + "/lidar_source.npy", p)
PYEOF
    for tag in near utm; do
        expect 0 -- "$PTREG" icp "$WORK/source_$tag.ply" "$WORK/target_$tag.ply" --max-dist 1 --max-iter 50 \
            -t "$WORK/T_$tag.txt"
    done
    "$PY" - "$WORK" <<'PYEOF' || fail "the pose at UTM coordinates is not the pose near zero"
import sys
import numpy as np
work = sys.argv[1]
S = np.array([500000.123, 4500000.456, 100.0])
A, B = np.loadtxt(work + "/T_near.txt"), np.loadtxt(work + "/T_utm.txt")
p = np.load(work + "/lidar_source.npy")
pa = p @ A[:3, :3].T + A[:3, 3]
pb = (p + S) @ B[:3, :3].T + B[:3, 3] - S
err = np.abs(pa - pb).max()
assert err < 1e-3, "points placed %.6g m apart" % err
PYEOF
fi

# LAS while reading: --classes (ptreg writes class 1, unclassified) and --crop
expect 0 -- "$PTREG" convert "$WORK/c.las" --classes 1 -o "$WORK/all.las"
check_world "$WORK/all.las" "LAS to LAS, class 1 kept"
expect 3 -- "$PTREG" convert "$WORK/c.las" --classes 2,6 -o "$WORK/none.ply"
err_has "none passed the crop box or the classes"
no_file "$WORK/none.ply"
expect 3 -- "$PTREG" convert "$WORK/utm.ply" --classes 2 -o "$WORK/none.ply"
err_has "only LAS files have classes"
expect 2 -- "$PTREG" convert "$WORK/c.las" --crop 1,2,3 -o "$WORK/none.ply"
expect 0 -- "$PTREG" convert "$WORK/c.las" --crop 500050,4500050,0,500150.5,4500200,1000 --voxel 0.5 \
    -o "$WORK/crop.ply"
"$PY" - "$WORK" <<'PYEOF' || fail "--crop --voxel: not the points of the box"
import sys
import numpy as np
work = sys.argv[1]
w = np.load(work + "/w.npy")
inside = (w[:, 0] >= 500050) & (w[:, 0] <= 500150.5) & (w[:, 1] >= 4500050) & (w[:, 1] <= 4500200)
data = open(work + "/crop.ply", "rb").read()
end = data.index(b"end_header\n") + 11
p = np.frombuffer(data[end:], dtype="<f8").reshape(-1, 3)
assert 0 < len(p) <= inside.sum(), (len(p), inside.sum())
lo, hi = w[inside].min(0), w[inside].max(0)
assert (p >= lo - 1e-3).all() and (p <= hi + 1e-3).all()
PYEOF

# an index file keeps no origin yet: said, nothing written
expect 3 -- "$PTREG" index "$WORK/utm.ply" -o "$WORK/utm.pti"
err_has "far from zero"
no_file "$WORK/utm.pti"
# normals face a viewpoint given in the world
expect 0 -- "$PTREG" normals "$WORK/utm.ply" --viewpoint 500150,4500150,1000 -o "$WORK/n.ply"
"$PY" - "$WORK/n.ply" <<'PYEOF' || fail "normals do not face the world's viewpoint"
import sys
import numpy as np
data = open(sys.argv[1], "rb").read()
end = data.index(b"end_header\n") + 11
dt = np.dtype([("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("nx", "<f4"), ("ny", "<f4"), ("nz", "<f4"), ("c", "<f4")])
r = np.frombuffer(data[end:], dtype=dt)
p = np.c_[r["x"], r["y"], r["z"]]
n = np.c_[r["nx"], r["ny"], r["nz"]]
assert (((np.array([500150.0, 4500150.0, 1000.0]) - p) * n).sum(1) >= 0).all()
PYEOF

# nor can a far source meet a model index (float32 world points): said
expect 0 -- "$PTREG" synth --shape aircraft --model "$WORK/m.ply" --model-points 500 -o "$WORK/s.ply" --points 300
expect 0 -- "$PTREG" index "$WORK/m.ply" -o "$WORK/m.pti"
expect 3 -- "$PTREG" icp "$WORK/utm.ply" --target-index "$WORK/m.pti"
err_has "keeps no origin"
finish
