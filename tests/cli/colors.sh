#!/bin/bash
# Data kept (issue 47): colours and intensity through PCD, PLY, text and LAS
# (bit-exact colours, PCL's packed rgb included); text columns by header
# name, headerless 6 columns told apart by their values or refused (exit 3
# naming the file and line); normals into LAS refused (exit 2, no file);
# icp -o keeps the colours; OBJ, STL and OFF read as their vertices, and
# hostile ones (cut, lying counts) exit 3.
. "$(dirname "$0")/lib.sh"
numpy_python

# ---- inputs ----
"$PY" - "$WORK" <<'PYEOF'
import struct, sys
import numpy as np
work = sys.argv[1]
rng = np.random.default_rng(3)
n = 500
xyz = rng.uniform(-1, 1, (n, 3)).astype("<f4")
rgb = rng.integers(0, 256, (n, 3), dtype=np.uint8)
rgb[0] = (255, 255, 255)  # opaque white: its packed float is a NaN
np.save(work + "/xyz.npy", xyz)
np.save(work + "/rgb.npy", rgb)
packed = (0xFF << 24) | (rgb[:, 0].astype(np.uint32) << 16) | (rgb[:, 1].astype(np.uint32) << 8) | rgb[:, 2]
rec = np.zeros(n, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("rgb", "<u4")])
rec["x"], rec["y"], rec["z"], rec["rgb"] = xyz[:, 0], xyz[:, 1], xyz[:, 2], packed
with open(work + "/in.pcd", "wb") as f:
    f.write(("VERSION 0.7\nFIELDS x y z rgb\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 1\n"
             "WIDTH %d\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS %d\nDATA binary\n" % (n, n)).encode())
    f.write(rec.tobytes())
with open(work + "/rgb.txt", "w") as f:
    f.write("x y z r g b\n")
    for p, c in zip(xyz, rgb):
        f.write("%.9g %.9g %.9g %d %d %d\n" % (*p, *c))
with open(work + "/rgb.csv", "w") as f:
    f.write("X,Y,Z,Red,Green,Blue\n")
    for p, c in zip(xyz, rgb):
        f.write("%.9g,%.9g,%.9g,%d,%d,%d\n" % (*p, *c))
with open(work + "/intensity.txt", "w") as f:
    f.write("x y z intensity\n")
    for i, p in enumerate(xyz):
        f.write("%.9g %.9g %.9g %d\n" % (*p, 100 * i))
with open(work + "/six_colors.txt", "w") as f:  # no header: integers 0-255
    for p, c in zip(xyz, rgb):
        f.write("%.9g %.9g %.9g %d %d %d\n" % (*p, *c))
nrm = xyz / np.linalg.norm(xyz, axis=1, keepdims=True)
with open(work + "/six_normals.txt", "w") as f:  # no header: unit vectors
    for p, q in zip(xyz, nrm):
        f.write("%.9g %.9g %.9g %.9g %.9g %.9g\n" % (*p, *q))
with open(work + "/six_neither.txt", "w") as f:
    f.write("0 0 0 0 0 1\n1 0 0 0.5 0.5 0\n0 1 0 300 1 1\n")
PYEOF

# the colours of a file ptreg wrote, read back by ptreg as text: equal to rgb.npy, in order
same_colors() { # file, what
    expect 0 -- "$PTREG" convert "$1" -o "$WORK/back.txt"
    "$PY" - "$WORK" "$2" <<'PYEOF' || fail "$2: colours differ"
import sys
import numpy as np
work, what = sys.argv[1:3]
rgb = np.load(work + "/rgb.npy")
rows = open(work + "/back.txt").read().split("\n")
assert rows[0].split()[:6] == ["x", "y", "z", "r", "g", "b"], rows[0]  # LAS adds its intensity
got = np.array([[int(v) for v in r.split()[3:6]] for r in rows[1:] if r], dtype=np.int64)
assert got.shape == rgb.shape, got.shape
assert (got == rgb).all(), "%d rows off" % (got != rgb).any(axis=1).sum()
PYEOF
}

# ---- PCD rgb -> PLY -> PCD, binary and ascii ----
expect 0 -- "$PTREG" info "$WORK/in.pcd"
out_has "500 points with colours"
expect 0 -- "$PTREG" convert "$WORK/in.pcd" -o "$WORK/a.ply"
grep -q "property uchar red" "$WORK/a.ply" || fail "PCD to PLY: no red property"
same_colors "$WORK/a.ply" "PCD to PLY"
expect 0 -- "$PTREG" convert "$WORK/a.ply" -o "$WORK/b.pcd"
same_colors "$WORK/b.pcd" "PCD to PLY to PCD"
cmp -s <(tail -c 8000 "$WORK/in.pcd") <(tail -c 8000 "$WORK/b.pcd") || fail "PCD to PLY to PCD: the records are not the same bytes"
expect 0 -- "$PTREG" convert "$WORK/a.ply" -o "$WORK/c.pcd" --ascii
grep -q "^FIELDS x y z rgb" "$WORK/c.pcd" || fail "ascii PCD: no rgb field"
same_colors "$WORK/c.pcd" "PLY to ascii PCD"
expect 0 -- "$PTREG" convert "$WORK/in.pcd" -o "$WORK/d.ply" --ascii
same_colors "$WORK/d.ply" "PCD to ascii PLY"
expect 0 -- "$PTREG" filter "$WORK/a.ply" -o "$WORK/f.ply" --uniform 1
same_colors "$WORK/f.ply" "filter --uniform 1"

# ---- text by header name, CSV, and without a header ----
same_colors "$WORK/rgb.txt" "text x y z r g b"
same_colors "$WORK/rgb.csv" "CSV X,Y,Z,Red,Green,Blue"
same_colors "$WORK/six_colors.txt" "headerless 6 integer columns as colours"
expect 0 -- "$PTREG" convert "$WORK/six_normals.txt" -o "$WORK/n.ply" --ascii
grep -q "property float nx" "$WORK/n.ply" || fail "headerless unit vectors: not read as normals"
expect 3 -- "$PTREG" convert "$WORK/six_neither.txt" -o "$WORK/x.ply"
grep -q "six_neither.txt: line 2.*6 columns but neither normals" "$WORK/err" ||
    fail "6 columns neither normals nor colours: $(cat "$WORK/err")"
[ ! -e "$WORK/x.ply" ] || fail "a refused read left an output"
expect 0 -- "$PTREG" convert "$WORK/intensity.txt" -o "$WORK/i.ply" --ascii
grep -q "property ushort intensity" "$WORK/i.ply" || fail "x y z intensity: no intensity in the PLY"
"$PY" - "$WORK" <<'PYEOF' || fail "x y z intensity: values off"
import sys
import numpy as np
work = sys.argv[1]
body = open(work + "/i.ply").read().split("end_header\n")[1].split("\n")
got = [int(r.split()[3]) for r in body if r]
assert got == [100 * i for i in range(500)], got[:5]
PYEOF

# ---- LAS: format 2, colours back exactly ----
expect 0 -- "$PTREG" convert "$WORK/rgb.txt" -o "$WORK/c.las"
"$PY" -c 'import sys; d = open(sys.argv[1], "rb").read(); sys.exit(0 if d[104] == 2 and d[105] == 26 else 1)' \
    "$WORK/c.las" || fail "LAS with colours: not point format 2"
same_colors "$WORK/c.las" "text to LAS and back"

# ---- normals where they cannot go ----
expect 2 -- "$PTREG" normals "$WORK/rgb.txt" -o "$WORK/n.las"
grep -q "cannot hold normals: write PLY, PCD or text" "$WORK/err" || fail "normals -o n.las: $(cat "$WORK/err")"
[ ! -e "$WORK/n.las" ] || fail "normals -o n.las left a file"
expect 2 -- "$PTREG" convert "$WORK/n.ply" -o "$WORK/n2.las"
[ ! -e "$WORK/n2.las" ] || fail "convert of normals to LAS left a file"
expect 0 -- "$PTREG" convert "$WORK/n.ply" -o "$WORK/n3.las" --no-normals

# ---- registration outputs keep the colours ----
expect 0 -- "$PTREG" icp "$WORK/rgb.txt" "$WORK/rgb.txt" -o "$WORK/moved.ply" --max-iter 2 -q
same_colors "$WORK/moved.ply" "icp -o"
expect 0 -- "$PTREG" convert "$WORK/in.pcd" --transform <(printf '1 0 0 1\n0 1 0 2\n0 0 1 3\n0 0 0 1\n') -o "$WORK/t.ply"
same_colors "$WORK/t.ply" "convert --transform"

# ---- meshes ----
printf '# a mesh\no m\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 1\nvn 1 0 0\nvn 0 1 0\nvn 0 0 1\nf 1 2 3\nf 1 3 4\n' >"$WORK/m.obj"
printf 'OFF\n# comment\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 2 3\n' >"$WORK/m.off"
printf 'solid m\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nfacet normal 1 0 0\nouter loop\nvertex 0 0 0\nvertex 0 1 0\nvertex 0 0 1\nendloop\nendfacet\nendsolid m\n' >"$WORK/a.stl"
"$PY" - "$WORK" <<'PYEOF'
import struct, sys
work = sys.argv[1]
tris = [((0, 0, 1), (0, 0, 0), (1, 0, 0), (0, 1, 0)), ((1, 0, 0), (0, 0, 0), (0, 1, 0), (0, 0, 1))]
b = b"solid but binary" + b" " * 64 + struct.pack("<I", len(tris))
for t in tris:
    b += struct.pack("<12fH", *[c for v in t for c in v], 0)
open(work + "/b.stl", "wb").write(b)
open(work + "/lying.stl", "wb").write(b"x" * 80 + struct.pack("<I", 1 << 30) + b[84:])
open(work + "/cut.stl", "wb").write(b"x" * 80 + b[80:-7])
PYEOF
for m in m.obj m.off a.stl b.stl; do
    expect 0 -- "$PTREG" convert "$WORK/$m" -o "$WORK/m.txt"
    "$PY" - "$WORK/m.txt" "$m" <<'PYEOF' || fail "$m: not the mesh's 4 vertices"
import sys
rows = [[float(v) for v in r.split()[:3]] for r in open(sys.argv[1]).read().split("\n") if r and r[0] != "x"]
assert rows == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], rows
PYEOF
done
expect 0 -- "$PTREG" convert "$WORK/m.obj" -o "$WORK/mo.ply" --ascii
grep -q "property float nx" "$WORK/mo.ply" || fail "OBJ with one vn per v: no normals"
printf 'OFF\n1000 0 0\n0 0 0\n1 0 0\n' >"$WORK/short.off"
printf 'OFF\n3 0 0\n0 0 0\n1 zero 0\n0 1 0\n' >"$WORK/bad.off"
printf 'v 0 0 0\nv 1 0\nv 0 1 0\n' >"$WORK/bad.obj"
printf 'solid s\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n' >"$WORK/cut_ascii.stl"
for bad in "lying.stl:byte 80: triangle count 1073741824" "cut.stl:byte 80: triangle count 2 but the file holds 1" \
    "short.off:line 5: vertex count 1000 but the file ends after 2" "bad.off:line 4: 'zero' is not a number" \
    "bad.obj:line 2: a 'v' line has" "cut_ascii.stl:not whole triangles"; do
    f=${bad%%:*}
    expect 3 -- "$PTREG" convert "$WORK/$f" -o "$WORK/h.ply"
    { grep -qF "$f: " "$WORK/err" && grep -qF "${bad#*:}" "$WORK/err"; } || fail "$f: $(cat "$WORK/err")"
done
expect 2 -- "$PTREG" convert "$WORK/m.off" -o "$WORK/out.obj"
[ ! -e "$WORK/out.obj" ] || fail "convert -o out.obj left a file"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all colour, intensity and mesh checks passed"
