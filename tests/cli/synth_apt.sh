# ptreg synth --shape apt-polycrystal: the .pos atoms (m/q), the per-atom
# truth (.npy), the JSON summary, the lattice seen through the truth
# rotation, determinism, other point formats and the usage errors.
. "$(dirname "$0")/lib.sh"
S="$PTREG synth --shape apt-polycrystal"

expect 0 -- "$PTREG" synth --help; out_has "apt-polycrystal"; out_has "noise-depth"; out_has "w >= 0"

expect 0 -- $S -o "$WORK/a.pos" --truth-out "$WORK/t.npy" --box 6,5,4 --grains 4 --solute 0.1 --seed 3 --json
cp "$WORK/out" "$WORK/a.json"
has_file "$WORK/a.pos"; has_file "$WORK/t.npy"
python3 - "$WORK" <<'PY' || fail ".pos, truth .npy and --json disagree"
import json, math, struct, sys
w = sys.argv[1]
j = json.load(open(w + "/a.json"))
assert j["shape"] == "apt-polycrystal" and j["grains"] == 4 and j["box"] == [6, 5, 4], j
assert j["motif"] == "fcc" and j["lattice"] == 0.405 and j["efficiency"] == 0.5 and j["noise_depth"] == 0.025
n = j["atoms"]
expect = 0.5 * 6 * 5 * 4 * 4 / 0.405 ** 3
assert abs(n / expect - 1) < 0.05, (n, expect)
pos = open(w + "/a.pos", "rb").read()
assert len(pos) == 16 * n
rec = struct.unpack(">%df" % (4 * n), pos)
mq = rec[3::4]
assert set(mq) <= {27.0, 24.0}
sol = sum(1 for m in mq if m == 24.0)
assert sol == j["solute_atoms"] and abs(sol / n - 0.1) < 0.03, (sol, n)
for k, top in enumerate((6, 5, 4)):
    c = rec[k::4]
    assert all(-0.5 < x < top + 0.5 for x in c), (k, top)  # (a NaN is outside: NaN-safe)
raw = open(w + "/t.npy", "rb").read()
assert raw[:8] == b"\x93NUMPY\x01\x00"
hl = raw[8] | raw[9] << 8
head = raw[10:10 + hl].decode()
assert "'<f4'" in head and "(%d, 5)" % n in head, head
t = struct.unpack("<%df" % (5 * n), raw[10 + hl:])
counts = [0] * 4
for i in range(n):
    g = int(t[5 * i])
    assert t[5 * i] == g and 0 <= g < 4
    counts[g] += 1
    q = t[5 * i + 1:5 * i + 5]
    want = j["orientations"][g]
    assert all(abs(a - b) < 1e-6 for a, b in zip(q, want)), (q, want)
assert counts == j["grain_atoms"] and all(c > 0 for c in counts), counts
for q in j["orientations"]:
    assert q[0] >= 0 and abs(sum(x * x for x in q) - 1) < 1e-12
try:
    import numpy as np
except ImportError:
    np = None
if np is not None:
    a = np.load(w + "/t.npy")
    assert a.dtype == np.float32 and a.shape == (n, 5)
    assert np.array_equal(a.ravel(), np.array(t, dtype=np.float32))
PY

# the same seed, the same bits
expect 0 -- $S -o "$WORK/b.pos" --truth-out "$WORK/u.npy" --box 6,5,4 --grains 4 --solute 0.1 --seed 3
out_has "grain 3:"; out_has "truth: "
cmp -s "$WORK/a.pos" "$WORK/b.pos" || fail "same seed, different .pos"
cmp -s "$WORK/t.npy" "$WORK/u.npy" || fail "same seed, different truth"

# one grain, no noise, every atom: the truth rotation takes every offset
# from an atom onto the fcc lattice (a/2 times integers of even sum)
expect 0 -- $S -o "$WORK/one.xyz" --truth-out "$WORK/one.csv" --box 2.5 --grains 1 --efficiency 1 --noise 0 --json
python3 - "$WORK" <<'PY' || fail "the truth rotation does not take the atoms onto the fcc lattice"
import json, sys
from ptreg_checks import worst_abs_diff
w = sys.argv[1]
j = json.load(open(w + "/out"))
qw, qx, qy, qz = j["orientations"][0]
R = [[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qw * qz), 2 * (qx * qz + qw * qy)],
     [2 * (qx * qy + qw * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qw * qx)],
     [2 * (qx * qz - qw * qy), 2 * (qy * qz + qw * qx), 1 - 2 * (qx * qx + qy * qy)]]
pts = [list(map(float, l.replace(",", " ").split()[:3])) for l in open(w + "/one.xyz") if l.strip() and l[0] not in "#xX"]
assert len(pts) == j["atoms"] == j["sites"], (len(pts), j["atoms"])
h = 0.405 / 2
p0 = pts[0]
for p in pts:
    d = [p[k] - p0[k] for k in range(3)]
    r = [sum(R[i][k] * d[k] for k in range(3)) / h for i in range(3)]
    m = [round(v) for v in r]
    assert worst_abs_diff(r, m, "a site in lattice units") < 1e-3 and sum(m) % 2 == 0, (r, m)
rows = [l for l in open(w + "/one.csv")]
assert rows[0].strip() == "f0,f1,f2,f3,f4" and len(rows) == len(pts) + 1
PY

# point formats without m/q
expect 0 -- $S -o "$WORK/c.ply" --box 3 --motif bcc --lattice 0.2866 --noise 0.02 --noise-depth 0.01
has_file "$WORK/c.ply"; out_has "bcc sites"
expect 0 -- "$PTREG" info "$WORK/c.ply"

# usage errors, nothing written
expect 2 -- $S --truth-out "$WORK/e.npy"; err_has "nothing to write"
expect 2 -- $S -o "$WORK/e.pos" --efficiency 0; err_has "efficiency"
expect 2 -- $S -o "$WORK/e.pos" --efficiency 1.5; err_has "efficiency"
expect 2 -- $S -o "$WORK/e.pos" --noise -1; err_has "noise"
expect 2 -- $S -o "$WORK/e.pos" --grains 0; err_has "grains"
expect 2 -- $S -o "$WORK/e.pos" --lattice 0; err_has "lattice"
expect 2 -- $S -o "$WORK/e.pos" --motif diamond; err_has "not fcc, bcc, hcp or sc"
expect 2 -- $S -o "$WORK/e.pos" --box 1,2; err_has "X,Y,Z"
expect 2 -- $S -o "$WORK/e.pos" --box 0; err_has "box"
expect 2 -- $S -o "$WORK/e.pos" --truth-out "$WORK/e.txt"; err_has ".npy or .csv"
expect 2 -- $S -o "$WORK/e.epos"; err_has ".epos is not a format it writes"
expect 2 -- $S -o "$WORK/e.pos" --model "$WORK/m.ply"; err_has "not an option of --shape apt-polycrystal"
expect 2 -- $S -o "$WORK/e.pos" --box 400 --efficiency 1; err_has "2^31 atoms"
expect 2 -- "$PTREG" synth -o "$WORK/e.ply" --grains 3; err_has "option of --shape apt-polycrystal"
expect 2 -- "$PTREG" synth -o "$WORK/e.ply" --shape teapot; err_has "apt-polycrystal"
no_file "$WORK/e.pos"; no_file "$WORK/e.npy"; no_file "$WORK/e.ply"; no_file "$WORK/e.epos"
finish
