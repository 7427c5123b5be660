# ptreg normals, pfh and fpfh end to end: a plane's known normals and bins,
# every output format (PCD in PCL's layout, .npy, CSV), the Open3D
# convention, normals from the file or estimated, thread counts and the
# reference path giving the same bytes, exit codes for bad options and bad
# input with nothing written.
. "$(dirname "$0")/lib.sh"

# A 20 x 20 grid on z = 0 (spacing 0.1) plus a lone point far away, as
# ascii PLY, once without normals and once with normals +z.
python3 - "$WORK" <<'PY'
import sys
w = sys.argv[1]
pts = [(0.1 * (i % 20), 0.1 * (i // 20), 0.0) for i in range(400)] + [(50.0, 50.0, 50.0)]
def ply(path, normals):
    with open(path, "w") as f:
        props = "property float x\nproperty float y\nproperty float z\n"
        if normals:
            props += "property float nx\nproperty float ny\nproperty float nz\n"
        f.write(f"ply\nformat ascii 1.0\nelement vertex {len(pts)}\n{props}end_header\n")
        for p in pts:
            f.write("%g %g %g%s\n" % (p + (" 0 0 1" if normals else "",)))
ply(f"{w}/plane.ply", False)
ply(f"{w}/plane_n.ply", True)
open(f"{w}/broken.ply", "w").write("ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nend_header\n1\n2\n")
PY

# Normals: facing the viewpoint above the plane, every point but the lone one.
expect 0 -- "$PTREG" normals "$WORK/plane.ply" --k 8 --viewpoint 1,1,10 -o "$WORK/n.ply" --ascii --json
out_has '"missing":	0'; out_has '"k":	8'
python3 - "$WORK/n.ply" <<'PY' || fail "normals of the plane are not +z with curvature 0"
import sys
head, body = open(sys.argv[1]).read().split("end_header\n")
assert "property float curvature\n" in head, head
lines = body.split("\n")[:400]
assert all(abs(float(l.split()[5]) - 1) < 1e-5 and abs(float(l.split()[6])) < 1e-6 for l in lines), "not +z, 0"
PY
expect 0 -- "$PTREG" normals "$WORK/plane.ply" --k 8 -o "$WORK/n.pcd"
head -c 200 "$WORK/n.pcd" | grep -q "^FIELDS x y z normal_x normal_y normal_z curvature$" || fail "PCD lacks curvature"
expect 0 -- "$PTREG" normals "$WORK/plane.ply" --k 8 -o "$WORK/n.xyz"
[ "$(head -1 "$WORK/n.xyz" | wc -w)" -eq 6 ] || fail "XYZ output should have 6 columns"
expect 0 -- "$PTREG" normals "$WORK/plane.ply" --radius 0.15 --json
out_has '"missing":	1' # the lone point has no neighbor
# the library's options by their short names (CLI_SHORT), shown with them in --help
expect 0 -- "$PTREG" normals "$WORK/plane.ply" -r 0.15 --json
out_has '"missing":	1'
out_has '"radius":	0.15'
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" -k 8 --json
out_has '"k":	8'
expect 0 -- "$PTREG" pfh --help
out_has '-k, --k N'
out_has '-r, --radius R'
expect 2 -- "$PTREG" pfh "$WORK/plane_n.ply" --convention open3d; err_has "FPFH's"

# FPFH (PCL convention) as CSV: the plane puts 100 in bins 5, 16 and 27; the
# lone point (alone within the radius) gets an all-zero row.
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --radius 0.25 -o "$WORK/f.csv" --json
out_has '"bins":	33'; out_has '"normals":	"file"'; out_has '"convention":	"pcl"'; out_has '"time_ms"'
python3 - "$WORK/f.csv" <<'PY' || fail "FPFH CSV is not the plane's bins"
import sys
rows = open(sys.argv[1]).read().splitlines()
assert rows[0].split(",") == ["f%d" % b for b in range(33)], rows[0]
assert len(rows) == 402, len(rows)
v = [float(x) for x in rows[1 + 210].split(",")]
assert all(abs(x - (100 if b in (5, 16, 27) else 0)) < 1e-3 for b, x in enumerate(v)), v
assert all(float(x) == 0 for x in rows[401].split(",")), rows[401]
PY
# Open3D's convention: blocks sum to 200.
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --radius 0.25 --convention open3d -o "$WORK/o.csv"
python3 - "$WORK/o.csv" <<'PY' || fail "open3d convention does not sum to 200"
import sys
v = [float(x) for x in open(sys.argv[1]).read().splitlines()[1 + 210].split(",")]
assert abs(sum(v[:11]) - 200) < 1e-3 and abs(v[16] - 200) < 1e-3, v
PY

# PFH as .npy (float32, n x 125) with bin 62 at 100; as PCD in PCL's layout.
expect 0 -- "$PTREG" pfh "$WORK/plane_n.ply" --k 10 -o "$WORK/p.npy"
python3 - "$WORK/p.npy" <<'PY' || fail "PFH .npy is not n x 125 float32 with bin 62 at 100"
import struct, sys, ast
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x93NUMPY\x01\x00"
hl = struct.unpack("<H", b[8:10])[0]
assert (10 + hl) % 64 == 0
d = ast.literal_eval(b[10:10 + hl].decode())
assert d == {"descr": "<f4", "fortran_order": False, "shape": (401, 125)}, d
vals = struct.unpack("<%df" % (401 * 125), b[10 + hl:])
row = vals[5 * 125:6 * 125]
assert abs(row[62] - 100) < 1e-3 and abs(sum(row) - 100) < 1e-3, row[60:64]
PY
expect 0 -- "$PTREG" pfh "$WORK/plane_n.ply" --k 10 -o "$WORK/p.pcd"
head -c 300 "$WORK/p.pcd" | grep -q "^FIELDS pfh$" || fail "PFH PCD lacks FIELDS pfh"
head -c 300 "$WORK/p.pcd" | grep -q "^COUNT 125$" || fail "PFH PCD lacks COUNT 125"
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 -o "$WORK/f.pcd"
python3 - "$WORK/f.pcd" <<'PY' || fail "FPFH PCD is not PCL's layout"
import sys
b = open(sys.argv[1], "rb").read()
head, data = b.split(b"DATA binary\n", 1)
h = head.decode()
for line in ("FIELDS fpfh", "SIZE 4", "TYPE F", "COUNT 33", "WIDTH 401", "HEIGHT 1", "POINTS 401"):
    assert line + "\n" in h, line
assert len(data) == 401 * 33 * 4, len(data)
PY

# Normals: from the file unless --recompute; estimated (with a note) when the file has none.
expect 0 -- "$PTREG" fpfh "$WORK/plane.ply" --k 10 -o "$WORK/e.csv"
err_has "has no normals: estimated"
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 --recompute --normal-k 8 --viewpoint 0,0,5 --json
out_has '"normals":	"estimated"'

# The same bytes for 1 and 2 threads, the reference path, and repeats.
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 --threads 1 -o "$WORK/t1.csv"
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 --threads 2 --repeat 3 -o "$WORK/t2.csv"
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 --reference -o "$WORK/r.csv"
cmp -s "$WORK/t1.csv" "$WORK/t2.csv" || fail "1 and 2 threads differ"
cmp -s "$WORK/t1.csv" "$WORK/r.csv" || fail "the reference path differs"

# Mistakes: exit 2, nothing written.
# --k with --radius: Open3D's hybrid search, the k nearest within the radius
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 --radius 0.2 --json -o "$WORK/h.csv"
out_has '"k":	10'; out_has '"radius":	0.2'
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 100000 --radius 0.2 -o "$WORK/h_ball.csv"
expect 0 -- "$PTREG" fpfh "$WORK/plane_n.ply" --radius 0.2 -o "$WORK/ball.csv"
# (the same points; the sums' order, hence the last bits, may differ)
checks tables "$WORK/h_ball.csv" "$WORK/ball.csv" 1e-3 --skip 1 --cols 33 \
    --what "hybrid with a k above every ball against the ball"
expect 2 -- "$PTREG" fpfh "$WORK/plane_n.ply" -o "$WORK/x.ply"
err_has "--output writes .pcd, .npy, .csv or .txt"
expect 2 -- "$PTREG" fpfh "$WORK/plane_n.ply" --convention pcl2 -o "$WORK/x.csv"
expect 2 -- "$PTREG" pfh "$WORK/plane_n.ply" --k 0 -o "$WORK/x.csv"
expect 2 -- "$PTREG" normals "$WORK/plane_n.ply" --radius -1 -o "$WORK/x.ply"
no_file "$WORK/x.csv"; no_file "$WORK/x.ply"

# Bad input: exit 3 naming the file, nothing written.
expect 3 -- "$PTREG" fpfh "$WORK/missing.ply" -o "$WORK/x.csv"
expect 3 -- "$PTREG" pfh "$WORK/broken.ply" -o "$WORK/x.csv"
err_has "broken.ply"
expect 3 -- "$PTREG" normals "$WORK/broken.ply" -o "$WORK/x.ply"
no_file "$WORK/x.csv"; no_file "$WORK/x.ply"

# orientations: the plane's normals along -z by --direction, +z by the tangent-plane rule
# normals_along FILE SIGN: every point of the plane (z = 0; most of them)
# has a finite normal whose z is SIGN within 0.01
normals_along() {
    python3 - "$1" "$2" <<'PY'
import sys
from ptreg_checks import finite, near
rows = [[finite(v, f"{sys.argv[1]}: {line!r}") for v in line.split()]
        for line in open(sys.argv[1]) if line.strip() and not line.startswith(("#", "x y z"))]  # the header line
plane = [r for r in rows if r[2] == 0]
assert len(rows[0]) == 6 and len(plane) > len(rows) // 2, (len(plane), len(rows))
for r in plane:
    near(r[5], float(sys.argv[2]), 0.01, f"the normal's z at {r[:3]}")
PY
}
expect 0 -- "$PTREG" normals "$WORK/plane.ply" --k 8 --orient direction --direction 0,0,-1 -o "$WORK/nd.xyz"
normals_along "$WORK/nd.xyz" -1 || fail "--orient direction 0,0,-1: not -z"
expect 0 -- "$PTREG" normals "$WORK/plane.ply" --k 8 --orient tangent-plane --orient-k 6 -o "$WORK/nt.xyz"
normals_along "$WORK/nt.xyz" 1 || fail "--orient tangent-plane: not +z"
expect 2 -- "$PTREG" normals "$WORK/plane.ply" --orient sideways; err_has "tangent-plane"

# --html: fpfh's page colours each point by its descriptor's distance to the mean descriptor, the point
# without one (the lone point: no normal) apart in grey; normals' page the cloud by curvature and segments
# along the normals; the JSON --json prints; a missing folder fails with nothing written.
if html_viewer; then
    # a bumpy sheet (the plane's descriptors are all one) and the lone point
    python3 - "$WORK" <<'PY'
import math, sys
pts = [(0.1 * (i % 20), 0.1 * (i // 20), 0.3 * math.sin(3 * 0.1 * (i % 20)) * math.cos(2 * 0.1 * (i // 20)))
       for i in range(400)] + [(50.0, 50.0, 50.0)]
with open(sys.argv[1] + "/bumps.xyz", "w") as f:
    f.write("".join("%.9g %.9g %.9g\n" % p for p in pts))
PY
    expect 0 -- "$PTREG" fpfh "$WORK/bumps.xyz" --k 10 --normal-radius 0.25 -o "$WORK/fh.csv" --json
    cp "$WORK/out" "$WORK/fj.json"; out_has '"missing":	1'
    expect 0 -- "$PTREG" fpfh "$WORK/bumps.xyz" --k 10 --normal-radius 0.25 --html "$WORK/f.html"
    out_has "1 without a descriptor"; has_file "$WORK/f.html"
    grep -q '"command"' "$WORK/out" && fail "--html without --json printed the JSON"
    expect 0 -- "$PTREG" normals "$WORK/plane.ply" --radius 0.15 --viewpoint 1,1,10 --json
    cp "$WORK/out" "$WORK/nj.json"
    expect 0 -- "$PTREG" normals "$WORK/plane.ply" --radius 0.15 --viewpoint 1,1,10 --html "$WORK/n.html"
    out_has "1 without a normal"; has_file "$WORK/n.html"
    python3 - "$WORK" "$(dirname "$0")" <<'PY' || fail "fpfh/normals --html: the pages' layers or numbers are wrong"
import json, math, sys
sys.path.insert(0, sys.argv[2])
import report_page
from ptreg_checks import compare, near, worst, worst_abs_diff
w = sys.argv[1]
page, want = report_page.load(w + "/f.html"), json.load(open(w + "/fj.json"))
assert page.result["missing"] == want["missing"] == 1 and page.result["points"] == 401, page.result
assert page.names() == ["cloud", "without a descriptor"], page.names()
cloud, lone = page.layer("cloud"), page.layer("without a descriptor")
assert cloud["count"] == 400 and cloud["valuesName"] == "FPFH distance to the mean", cloud
assert lone["count"] == 1 and page.floats(lone, "positions") == [50, 50, 50], lone
rows = [[float(v) for v in l.split(",")] for l in open(w + "/fh.csv").read().split("\n") if l and l[0] not in "#fb"]
rows = [r for r in rows if all(math.isfinite(v) for v in r)]
assert len(rows) == 400 and len(rows[0]) == 33, (len(rows), len(rows[0]))
mean = [sum(c) / len(rows) for c in zip(*rows)]
dist = [math.sqrt(sum((a - b) ** 2 for a, b in zip(r, mean))) for r in rows]
got = page.floats(cloud, "values")
far = worst(dist, "distances to the mean")
compare(worst_abs_diff(got, dist, "the page's distances"), "<", 1e-4 * far, "the page's distances, off by")
near(cloud["range"][1], far, 1e-4 * far, "the page's range's top")
assert far > 2 * min(dist) > 0, cloud["range"]  # nan-ok: every distance finite (worst() above)
npage = report_page.load(w + "/n.html")
assert npage.result["missing"] == json.load(open(w + "/nj.json"))["missing"] == 1, npage.result
assert npage.names() == ["cloud", "without a normal", "normals"], npage.names()
assert npage.layer("cloud")["valuesName"] == "curvature" and npage.layer("cloud")["count"] == 400
assert npage.floats(npage.layer("without a normal"), "positions") == [50, 50, 50]
seg = npage.layer("normals")
assert seg["kind"] == "lines" and seg["count"] == 400, seg
e = npage.floats(seg, "positions")
length = 0.02 * math.sqrt(3 * 50.0 ** 2)  # the bounding box: the grid's corner (0, 0, 0) to the lone point
for i in range(400):
    d = [e[6 * i + 3 + k] - e[6 * i + k] for k in range(3)]
    assert abs(d[0]) < 1e-6 and abs(d[1]) < 1e-6 and abs(d[2] - length) < 1e-4, (i, d)
PY
    expect 2 -- "$PTREG" fpfh "$WORK/plane_n.ply" --k 10 -o "$WORK/never.csv" --html "$WORK/no/such/dir/f.html"
    err_has "no/such/dir"; no_file "$WORK/never.csv"
    expect 2 -- "$PTREG" normals "$WORK/plane.ply" --k 8 -o "$WORK/never.ply" --html "$WORK/no/such/dir/n.html"
    err_has "no/such/dir"; no_file "$WORK/never.ply"
fi

# --help answers the questions.
expect 0 -- "$PTREG" fpfh --help
out_has "open3d"; out_has "strictly"
finish
