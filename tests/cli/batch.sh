# ptreg batch end to end: atoms (.pos with ranges, clouds) to orientations
# in every output format, pairs files, the engines agreeing (lanes and the
# ptreg_emicp loop bit for bit), one pair equal to ptreg emicp, thread
# counts, and exit codes for bad options and bad input. Needs numpy.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c "import numpy" 2>/dev/null || { echo "skip: numpy is not installed for $PY"; exit 77; }

$PY "$(dirname "$0")/batch_data.py" "$WORK" || { fail "batch_data.py"; finish; }

# ---- pairs ----

# one pair: ptreg emicp's answer
expect 0 -- "$PTREG" batch --pairs "$WORK/one.ptpairs" -o "$WORK/one.npy" --json --device cpu
out_has '"mode":	"pairs"'; out_has '"pairs":	1'; out_has '"pairs_per_s"'
expect 0 -- "$PTREG" emicp "$WORK/one_src.xyz" "$WORK/one_tgt.xyz" --json
cp "$WORK/out" "$WORK/emicp.json"
$PY - "$WORK" <<'EOF' || fail "one pair differs from ptreg emicp"
import json, numpy as np, sys
w = sys.argv[1]
row = np.load(w + '/one.npy')[0]
T = np.array(json.load(open(w + '/emicp.json'))['transformation'])
qw, qx, qy, qz = row[:4]
R = np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)],
              [2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx)],
              [2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)]])
assert np.abs(R - T[:3, :3]).max() < 1e-12, np.abs(R - T[:3, :3]).max()
assert (row[4:7] == T[:3, 3]).all(), (row[4:7], T[:3, 3])
assert row[8] == json.load(open(w + '/emicp.json'))['iterations']
EOF

# many pairs: the lanes give the ptreg_emicp loop's bits, for any thread count
expect 0 -- "$PTREG" batch --pairs "$WORK/ragged.ptpairs" -o "$WORK/lanes.npy" --threads 1 --device cpu
expect 0 -- "$PTREG" batch --pairs "$WORK/ragged.ptpairs" -o "$WORK/lanes2.npy" --threads 2 --device cpu
expect 0 -- "$PTREG" batch --pairs "$WORK/ragged.ptpairs" -o "$WORK/loop.npy" --engine loop
expect 0 -- "$PTREG" batch --pairs "$WORK/ragged.ptpairs" -o "$WORK/plain.csv" --engine plain
cmp -s "$WORK/lanes.npy" "$WORK/lanes2.npy" || fail "1 and 2 threads differ"
cmp -s "$WORK/lanes.npy" "$WORK/loop.npy" || fail "the lanes and the ptreg_emicp loop differ"
$PY - "$WORK" <<'EOF' || fail "the plain engine is far from the lanes"
import numpy as np, sys
w = sys.argv[1]
a = np.load(w + '/lanes.npy'); b = np.loadtxt(w + '/plain.csv', delimiter=',', skiprows=1)
assert a.shape == (53, 9) and b.shape == (53, 9)
assert np.abs(a[:, :8] - b[:, :8]).max() < 1e-5, np.abs(a[:, :8] - b[:, :8]).max()
assert (np.abs(a[:, 0] ** 2 + (a[:, 1:4] ** 2).sum(1) - 1) < 1e-9).all()
EOF
expect 0 -- "$PTREG" batch --pairs "$WORK/shared.ptpairs" --rotation-only --tol 0 --max-iter 10 --json
out_has '"pairs":	40'; out_has '"iterations_max":	10'; out_has '"translation":	false'

# ---- atoms ----
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/o.npy" --radius 0.35 --json --assignment "$WORK/assign.npy" \
    --motif-out "$WORK/motif.xyz"
for key in '"mode":	"atoms"' '"atoms":	864' '"registered":	863' '"not_finite":	1' '"symmetry":	24' \
    '"residual_histogram"' '"pairs_per_s"' '"neighbor_ms"'; do
    out_has "$key"
done
has_file "$WORK/motif.xyz"
$PY - "$WORK" <<'EOF' || fail "a perfect crystal's orientations are not the identity"
import numpy as np, sys
w = sys.argv[1]
o = np.load(w + '/o.npy'); s = np.load(w + '/assign.npy')
assert o.shape == (864, 6) and o.dtype == np.float32 and s.shape == (864, 12) and s.dtype == np.int32
assert np.isnan(o[5]).all() and (s[5] == -1).all()
ok = np.delete(o, 5, axis=0)
assert (np.abs(ok[:, 0] - 1) < 1e-6).all() and (ok[:, 5] == 1).all() and (ok[:, 4] < 1e-5).all()
EOF
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/o.ply" --ranges "$WORK/ranges.rrng" --ion Al --json
out_has '"selected":	741'; out_has '"not_selected":	123'
head -c 300 "$WORK/o.ply" | grep -q "binary_little_endian" || fail "the PLY is not binary"
head -c 800 "$WORK/o.ply" | grep -q "property uchar red" || fail "the PLY has no colour"
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/o.csv" --ranges "$WORK/ranges.rrng" --ion Al,Mg \
    --estimate-motif 1 --k 8 --motif-points 12
head -1 "$WORK/o.csv" | grep -q "^x,y,z,qw,qx,qy,qz,residual,matched,flag$" || fail "CSV header"
grep -q ",not_finite$" "$WORK/o.csv" || fail "CSV lacks the not_finite flag"
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/t.ply" --ascii --motif bcc --lattice 0.3 --k 8
head -3 "$WORK/t.ply" | grep -q "format ascii" || fail "--ascii PLY"
expect 0 -- "$PTREG" batch --help; out_has "onto the motif"; out_has "fundamental zone"

# --html: the atoms in the PLY's orientation colours with the key of the motif (fcc: the inverse pole
# figure's triangle; hcp: the axis), the JSON --json prints; not for --pairs; a missing folder fails.
if html_viewer; then
    expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/h.ply" --radius 0.35 --json
    cp "$WORK/out" "$WORK/bj.json"
    expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/h.ply" --radius 0.35 --html "$WORK/b.html"
    out_has "863 registered"; has_file "$WORK/b.html"
    grep -q '"command"' "$WORK/out" && fail "--html without --json printed the JSON"
    expect 0 -- "$PTREG" batch "$WORK/crystal.pos" --motif hcp --k 12 --html "$WORK/hcp.html"
    has_file "$WORK/hcp.html"
    $PY - "$WORK" "$(dirname "$0")" <<'EOF' || fail "batch --html: the page's layers, colours or numbers are wrong"
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import report_page
w = sys.argv[1]
page, want = report_page.load(w + "/b.html"), json.load(open(w + "/bj.json"))
assert page.result["registered"] == want["registered"] == 863, page.result
assert page.result["orientations"]["residual_mean"] == want["orientations"]["residual_mean"]
assert page.description["key"] == "ipf" and page.names() == ["atoms", "grains"], (page.description["key"], page.names())
# the grain map's layer and figures: one crystal, one grain; the pole figures of a cubic motif
assert page.layer("grains")["count"] == 863, page.layer("grains")
titles = [f["title"] for f in page.description["figures"]]
assert titles == ["Grain boundaries' misorientation", "{100} pole figure", "{110} pole figure",
                  "{111} pole figure"], titles
assert all(f["svg"].startswith("<svg") for f in page.description["figures"])
atoms = page.layer("atoms")
assert atoms["kind"] == "points" and atoms["count"] == 863, atoms  # not the atom at NaN
raw = open(w + "/h.ply", "rb").read()
body = raw[raw.index(b"end_header\n") + 11:]
rows = np.frombuffer(body, dtype=np.dtype([("v", "<f4", 9), ("flag", "u1"), ("rgb", "u1", 3)]))
assert len(rows) == 864
rows = rows[np.isfinite(rows["v"][:, :3]).all(1)]
assert (np.frombuffer(page.bytes_of(atoms, "colors"), np.uint8).reshape(-1, 3) == rows["rgb"]).all()
assert (np.array(page.floats(atoms, "positions")).reshape(-1, 3) == rows["v"][:, :3]).all()
hcp = report_page.load(w + "/hcp.html")
assert hcp.description["key"] == "axis" and hcp.result["motif"]["source"] == "hcp", hcp.description["key"]
assert [f["title"] for f in hcp.description["figures"]] == ["Grain boundaries' misorientation"]  # no cubic poles
EOF
    expect 2 -- "$PTREG" batch --pairs "$WORK/one.ptpairs" -o "$WORK/never.npy" --html "$WORK/never.html"
    err_has "for atoms"; no_file "$WORK/never.npy"; no_file "$WORK/never.html"
    expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.ply" --html "$WORK/no/such/dir/b.html"
    err_has "no/such/dir"; no_file "$WORK/never.ply"
fi

if has_data; then
    expect 0 -- "$PTREG" batch "$DATA/apt/cubicTestSmall.pos" -o "$WORK/cubic.npy" --json
    out_has '"atoms":	4000'
    $PY - "$WORK" <<'EOF' || fail "cubicTestSmall.pos does not give one orientation"
import numpy as np, sys
o = np.load(sys.argv[1] + '/cubic.npy')
good = o[:, 5] >= 0.9   # neighborhoods matched throughout: the crystal's inside
angle = 2 * np.degrees(np.arccos(np.clip(o[good, 0], -1, 1)))
assert good.sum() >= 2900 and np.percentile(angle, 99) < 0.01, (good.sum(), np.percentile(angle, 99))
EOF
fi

# --grains-out: the grain map's files; one crystal is one grain
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" --radius 0.35 --grains-out "$WORK/gr" --grain-min-atoms 50 --json
$PY - "$WORK" <<'EOF' || fail "batch --grains-out: the files or the JSON are wrong"
import csv, json, sys
import numpy as np
import xml.etree.ElementTree as ET
w = sys.argv[1]
out = json.load(open(w + "/out"))
g = out["grain_map"]
assert g["grains"] == 1 and g["grained_atoms"] == 863 and g["boundaries"] == 0 and g["threshold_deg"] == 5, g
ids = np.load(w + "/gr/grain_map.npy")
assert ids.dtype == np.int32 and ids.shape == (864, 1) and (ids == 0).sum() == 863 and (ids == -1).sum() == 1
rows = list(csv.DictReader(open(w + "/gr/grains.csv")))
assert len(rows) == 1 and int(rows[0]["atoms"]) == 863 and float(rows[0]["spread_deg"]) < 1, rows
assert open(w + "/gr/boundaries.csv").read() == "grain_a,grain_b,links,misorientation_deg\n"
for name in ("misorientation", "pole_100", "pole_110", "pole_111"):
    root = ET.parse(w + "/gr/" + name + ".svg").getroot()
    assert root.tag.endswith("svg"), name
EOF
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" --radius 0.35 --grains-out "$WORK/gr"; out_has "grains: 1"

# --max-memory: a reconstruction needing more is read and registered in slabs, one after another;
# the same bytes as read whole, the rows written in place (binary PLY, .npy, the assignment)
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/whole.ply" --assignment "$WORK/whole_a.npy" \
    --ranges "$WORK/ranges.rrng" --ion Al --json
grep -q '"slabs"' "$WORK/out" && fail "batch read in slabs below --max-memory"
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/slabs.ply" --assignment "$WORK/slabs_a.npy" \
    --ranges "$WORK/ranges.rrng" --ion Al --max-memory 0.2 --json
out_has '"slabs":'; out_has '"selected":	741'; out_has '"not_selected":	123'; out_has '"not_finite":	1'
cmp -s "$WORK/whole.ply" "$WORK/slabs.ply" || fail "batch in slabs: the PLY differs from the whole read's"
cmp -s "$WORK/whole_a.npy" "$WORK/slabs_a.npy" || fail "batch in slabs: the assignment differs"
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/whole.npy" --grain-radius 0.8 --motif-points 18
expect 0 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/slabs.npy" --grain-radius 0.8 --motif-points 18 \
    --max-memory 0.3
out_has "slabs (more than --max-memory)"
cmp -s "$WORK/whole.npy" "$WORK/slabs.npy" || fail "batch in slabs with --grain-radius: the .npy differs"
for whole in "--grains-out $WORK/never" "--html $WORK/never.html" "--estimate-motif 1"; do
    # shellcheck disable=SC2086 # the option and its value, two words
    expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --max-memory 0.2 $whole
    err_has "every atom at once"; err_has "raise it"
done
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.csv" --max-memory 0.2; err_has "written in place"
no_file "$WORK/never.csv"; no_file "$WORK/never"; no_file "$WORK/never.html"

# ---- bad options: exit 2, nothing written ----
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --motif xyz; err_has "xyz"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --ion Al; err_has "ranges"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --ranges "$WORK/ranges.rrng" --ion Fe
err_has "Fe"
expect 2 -- "$PTREG" batch "$WORK/one_src.xyz" -o "$WORK/never.npy" --ranges "$WORK/ranges.rrng" --ion Al
err_has "mass-to-charge"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.vtk"; err_has ".npy"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --k 2; err_has "k"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --translation --rotation-only
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --engine loop --translation; err_has "pairs"
expect 2 -- "$PTREG" batch --pairs "$WORK/one.ptpairs" -o "$WORK/never.npy" --k 12; err_has "for atoms"
expect 2 -- "$PTREG" batch --pairs "$WORK/one.ptpairs" -o "$WORK/never.npy" --engine loop --rotation-only
expect 2 -- "$PTREG" batch --pairs "$WORK/one.ptpairs" -o "$WORK/never.ply"; err_has "npy or .csv"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos"; err_has "nothing to do"
expect 2 -- "$PTREG" batch "$WORK/crystal.pos" --grains-out "$WORK/never" --grain-threshold 0; err_has "grain-threshold"
expect 2 -- "$PTREG" batch --pairs "$WORK/one.ptpairs" -o "$WORK/never.npy" --grains-out "$WORK/never"
err_has "for atoms"; no_file "$WORK/never"
no_file "$WORK/never.npy"

# ---- bad input: exit 3, the file named, nothing written ----
expect 3 -- "$PTREG" batch "$WORK/bad.pos" -o "$WORK/never.npy"; err_has "bad.pos: byte"; no_file "$WORK/never.npy"
expect 3 -- "$PTREG" batch "$WORK/bad.pos" -o "$WORK/never.npy" --max-memory 0.01; err_has "bad.pos: byte"
no_file "$WORK/never.npy"
expect 3 -- "$PTREG" batch --pairs "$WORK/truncated.ptpairs" -o "$WORK/never.npy"
err_has "truncated.ptpairs: byte"; no_file "$WORK/never.npy"
expect 3 -- "$PTREG" batch --pairs "$WORK/huge.ptpairs" -o "$WORK/never.npy"; err_has "huge.ptpairs: byte 8"
expect 3 -- "$PTREG" batch --pairs "$WORK/crystal.pos" -o "$WORK/never.npy"; err_has "not a ptreg pairs file"
expect 3 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --ranges "$WORK/bad.pos" --ion Al
no_file "$WORK/never.npy"
# an ion that two ranges would name
printf '[Ranges]\nNumber=2\nRange1=26.5 27.5 Al:1\nRange2=27.0 28.0 Mg:1\n' > "$WORK/overlap.rrng"
expect 3 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --ranges "$WORK/overlap.rrng" --ion Al
err_has "overlap.rrng: line 4: ranges overlap"; no_file "$WORK/never.npy"
# a motif of two points, and an .epos that is not whole 44-byte records
printf '0.1 0 0\n0 0.2 0\n' > "$WORK/two.xyz"
expect 3 -- "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --motif-file "$WORK/two.xyz"
err_has "two.xyz"; err_has "this one 2"; no_file "$WORK/never.npy"
head -c 4400 "$WORK/crystal.pos" > "$WORK/cut.epos"; head -c 7 "$WORK/crystal.pos" >> "$WORK/cut.epos"
expect 3 -- "$PTREG" batch "$WORK/cut.epos" -o "$WORK/never.npy"; err_has "cut.epos: byte 4400"
no_file "$WORK/never.npy"
finish
