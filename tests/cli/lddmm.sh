# ptreg lddmm and ptreg warp end to end: an ellipse matched onto a circle
# (JSON fields, the distance cut), results as VTK and CSV read back by warp
# (which moves the landmarks as the flow did), the trajectory, and exit codes
# for mismatched counts, NaNs, sigma <= 0 and bad result files.
. "$(dirname "$0")/lib.sh"

python3 - "$WORK" <<'PY'
import math, sys
w = sys.argv[1]
n = 40
def write(name, pts):
    with open(f"{w}/{name}", "w") as f:
        f.write("x,y,z\n")
        for p in pts:
            f.write("%.9g,%.9g,%.9g\n" % p)
ell = [(1.5 * math.cos(2 * math.pi * i / n), 0.6 * math.sin(2 * math.pi * i / n), 0.0) for i in range(n)]
cir = [(math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n), 0.0) for i in range(n)]
write("ellipse.csv", ell)
write("circle.csv", cir)
write("short.csv", cir[:-1])
open(f"{w}/nan.csv", "w").write("x,y,z\n" + "".join("%g,%g,0\n" % p[:2] for p in cir[:-1]) + "nan,0,0\n")
# a cloud to warp: points inside the ellipse
write("inside.csv", [(0.5 * math.cos(a), 0.2 * math.sin(a), 0.0) for a in [0.1 * k for k in range(30)]])
open(f"{w}/bad_result.vtk", "w").write("# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 2 double\n0 0 0 1 1 1\n")
open(f"{w}/huge_result.vtk", "w").write("# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 99999999999 double\n0 0 0\n")
PY

expect 0 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --steps 20 --lambda 1000 --gamma 1 \
    -o "$WORK/r.vtk" --moved "$WORK/moved.ply" --trajectory "$WORK/traj" --json
for f in H objective iterations evaluations avg_distance_before avg_distance_after max_distance_before \
    max_distance_after time_ms pair_terms_per_s; do out_has "\"$f\":"; done
python3 - "$WORK/out" <<'PY' || fail "the ellipse is not matched onto the circle 100-fold"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["avg_distance_before"] / r["avg_distance_after"] >= 100, r
assert r["landmarks"] == 40 and r["integrator"] == "euler" and r["precision"] == "fp32"
PY
has_file "$WORK/r.vtk"; has_file "$WORK/moved.ply"; has_file "$WORK/traj/t_000.ply"; has_file "$WORK/traj/t_019.ply"
grep -q "^VECTORS InitialMomentum double$" "$WORK/r.vtk" || fail "no InitialMomentum in the result"
grep -q "^sigma 1 1 double$" "$WORK/r.vtk" || fail "no sigma field data in the result"

# warp: the template's own landmarks land where the flow took them; the CSV form reads back the same.
expect 2 -- "$PTREG" warp "$WORK/r.vtk" "$WORK/ellipse.csv"; err_has "give the output file: -o OUT"
expect 0 -- "$PTREG" warp "$WORK/r.vtk" "$WORK/ellipse.csv" -o "$WORK/w.ply" --ascii
expect 0 -- "$PTREG" convert "$WORK/moved.ply" -o "$WORK/moved_a.ply" --ascii
cmp -s <(sed -n '/end_header/,$p' "$WORK/w.ply") <(sed -n '/end_header/,$p' "$WORK/moved_a.ply") ||
    fail "warped landmarks differ from the shot template"
expect 0 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --max-iter 20 --integrator rk2 \
    -o "$WORK/r.csv" --moved "$WORK/m2.ply"
head -1 "$WORK/r.csv" | grep -q "^# ptreg lddmm sigma 0.29999999999999999 time_points 20 integrator rk2$" ||
    fail "CSV result header"
expect 0 -- "$PTREG" warp "$WORK/r.csv" "$WORK/inside.csv" -o "$WORK/w2.csv" --json
out_has '"points":	30'
# a result as the starting momenta: 0 more iterations reproduce it
expect 0 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --max-iter 0 --integrator rk2 \
    --init "$WORK/r.csv" --moved "$WORK/m3.ply"
cmp -s "$WORK/m2.ply" "$WORK/m3.ply" || fail "--init from a result does not reproduce it"

# --html: lddmm's page holds the template, the target, the landmarks' paths (from the template to where
# they ended), the ends and the objective per iteration; warp's the points before and after and their
# paths, which end where the points ended. The JSON in the pages is --json's; a missing folder fails.
if html_viewer; then
    lddmm_args=("$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --max-iter 30 --integrator rk2)
    expect 0 -- "$PTREG" lddmm "${lddmm_args[@]}" --json -o "$WORK/rh.csv"
    cp "$WORK/out" "$WORK/lj.json"
    expect 0 -- "$PTREG" lddmm "${lddmm_args[@]}" --html "$WORK/l.html" --moved "$WORK/lh.csv"
    out_has "average distance"; has_file "$WORK/l.html"
    grep -q '"command"' "$WORK/out" && fail "--html without --json printed the JSON"
    expect 0 -- "$PTREG" warp "$WORK/rh.csv" "$WORK/inside.csv" -o "$WORK/wh.csv" --json
    cp "$WORK/out" "$WORK/wj.json"
    expect 0 -- "$PTREG" warp "$WORK/rh.csv" "$WORK/inside.csv" -o "$WORK/wh.csv" --html "$WORK/w.html"
    out_has "30 points along 40 landmarks"; has_file "$WORK/w.html"
    python3 - "$WORK" "$(dirname "$0")" <<'PY' || fail "lddmm/warp --html: the pages' layers or numbers are wrong"
import json, sys
sys.path.insert(0, sys.argv[2])
import report_page
w = sys.argv[1]
def near(a, b, tol):
    assert len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b)), (a[:6], b[:6])
def points(path):
    lines = [l for l in open(path).read().split("\n") if l and l[0] in "-.0123456789"]
    return [float(v) for l in lines for v in l.replace(",", " ").split()[:3]]
page, want = report_page.load(w + "/l.html"), json.load(open(w + "/lj.json"))
for k in ("objective", "H", "iterations", "avg_distance_after", "max_distance_after"):
    assert page.result[k] == want[k], (k, page.result[k], want[k])
assert page.names() == ["template", "target", "paths", "template at t = 1"], page.names()
assert [l["kind"] for l in page.layers] == ["points", "points", "paths", "points"]
paths = page.layer("paths")
assert paths["count"] == 40 and paths["length"] == 20, paths
p, T = page.floats(paths, "positions"), 20
near([p[3 * (i * T) + k] for i in range(40) for k in range(3)], page.floats(page.layer("template"), "positions"), 0)
end = page.floats(page.layer("template at t = 1"), "positions")
near([p[3 * (i * T + T - 1) + k] for i in range(40) for k in range(3)], end, 0)
near(end, points(w + "/lh.csv"), 1e-6)
near(page.floats(page.layer("target"), "positions"), points(w + "/circle.csv"), 1e-6)
curve = page.description["curves"][0]
steps = [v for v in curve["values"] if v is not None]  # one per iteration, from the first
assert len(steps) == want["iterations"] and curve["measure"] == "objective", curve
assert steps[0] > steps[-1] and abs(steps[-1] - want["objective"]) <= 1e-9 * want["objective"], (steps, want)
wpage, wwant = report_page.load(w + "/w.html"), json.load(open(w + "/wj.json"))
assert wpage.result["points"] == wwant["points"] == 30 and wpage.result["landmarks"] == 40, wpage.result
assert wpage.names() == ["landmarks", "points before", "points after", "paths"], wpage.names()
after = wpage.floats(wpage.layer("points after"), "positions")
near(after, points(w + "/wh.csv"), 1e-6)
wp = wpage.layer("paths")
assert wp["count"] == 30 and wp["length"] == 20, wp
p = wpage.floats(wp, "positions")
near([p[3 * (i * T) + k] for i in range(30) for k in range(3)], points(w + "/inside.csv"), 1e-6)
# the paths are stepped one at a time: their ends are the warp's within rounding
near([p[3 * (i * T + T - 1) + k] for i in range(30) for k in range(3)], after, 1e-5)
PY
    expect 2 -- "$PTREG" lddmm "${lddmm_args[@]}" --html "$WORK/no/such/dir/l.html" -o "$WORK/rn.vtk"
    err_has "no/such/dir"; no_file "$WORK/rn.vtk"
    expect 2 -- "$PTREG" warp "$WORK/rh.csv" "$WORK/inside.csv" -o "$WORK/wn.csv" --html "$WORK/no/such/dir/w.html"
    err_has "no/such/dir"; no_file "$WORK/wn.csv"
fi

# A landmark table (optical_nerves.txt's layout): rows are landmark sets.
printf '"Filename"\t"Ax"\t"Ay"\t"Az"\t"Note"\t"Bx"\t"By"\t"Bz"\t"Cx"\t"Cy"\t"Cz"\n' >"$WORK/table.tsv"
printf '"one"\t0\t0\t0\t"x"\t2\t0\t0\t0\t2\t0\n"two"\t0.3\t0\t0\t"y"\t2.2\t0.1\t0\t0\t2.1\t0.2\n' >>"$WORK/table.tsv"
printf '"Filename"\t"S"\t"T"\n"a"\t1\t2\n' >"$WORK/notable.tsv"
expect 0 -- "$PTREG" lddmm "$WORK/table.tsv" "$WORK/table.tsv" --template-row 1 --target-row 2 --sigma 1 --json
out_has '"landmarks":	3'
python3 - "$WORK/out" <<'PY' || fail "the table's landmark sets are not matched"
import json, sys
r = json.load(open(sys.argv[1]))
assert abs(r["avg_distance_before"] - (0.3 + (0.2**2 + 0.1**2) ** 0.5 + (0.1**2 + 0.2**2) ** 0.5) / 3) < 1e-6, r
assert r["avg_distance_after"] < 1e-3 * r["avg_distance_before"], r
PY
expect 3 -- "$PTREG" lddmm "$WORK/table.tsv" "$WORK/table.tsv" --template-row 1 --target-row 3
err_has "no data row 3"
expect 3 -- "$PTREG" lddmm "$WORK/notable.tsv" "$WORK/table.tsv" --template-row 1 --target-row 2
err_has "no landmark columns"
expect 2 -- "$PTREG" lddmm "$WORK/table.tsv" "$WORK/table.tsv" --template-row 0 --target-row 2

# Mistakes: exit 2; bad input: exit 3; nothing written.
expect 2 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0 -o "$WORK/x.vtk"
expect 2 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma -1 -o "$WORK/x.vtk"
expect 2 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --integrator rk4 -o "$WORK/x.vtk"
expect 2 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --steps 1 -o "$WORK/x.vtk"
expect 3 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/short.csv" -o "$WORK/x.vtk"
err_has "must correspond one to one"
expect 3 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/nan.csv" -o "$WORK/x.vtk"
err_has "non-finite"
expect 3 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/missing.csv" -o "$WORK/x.vtk"
no_file "$WORK/x.vtk"
expect 3 -- "$PTREG" warp "$WORK/bad_result.vtk" "$WORK/inside.csv" -o "$WORK/x.ply"
err_has "bad_result.vtk"
expect 3 -- "$PTREG" warp "$WORK/huge_result.vtk" "$WORK/inside.csv" -o "$WORK/x.ply"
err_has "line 5"
expect 3 -- "$PTREG" warp "$WORK/circle.csv" "$WORK/inside.csv" -o "$WORK/x.ply"
expect 2 -- "$PTREG" warp "$WORK/r.vtk" "$WORK/inside.csv"
no_file "$WORK/x.ply"
# progress: a line on a terminal's stderr (script gives the run one), none in a
# pipe, with --json or --quiet; --plot draws the objective per iteration
if command -v script >/dev/null; then
    args="\"$WORK/ellipse.csv\" \"$WORK/circle.csv\" --sigma 0.3 --max-iter 50"
    script -qec "\"$PTREG\" lddmm $args" /dev/null >"$WORK/tty.txt" 2>&1
    grep -q "iteration 1 of at most 50, objective" "$WORK/tty.txt" || fail "no progress line on a terminal"
    script -qec "\"$PTREG\" lddmm $args --json" /dev/null >"$WORK/tty.txt" 2>&1
    grep -q "of at most" "$WORK/tty.txt" && fail "a progress line with --json"
    script -qec "\"$PTREG\" lddmm $args -q" /dev/null >"$WORK/tty.txt" 2>&1
    grep -q "of at most" "$WORK/tty.txt" && fail "a progress line with --quiet"
fi
expect 0 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --max-iter 50 --plot "$WORK/obj.svg"
grep -q "of at most" "$WORK/err" && fail "a progress line in a pipe"
grep -q "<polyline" "$WORK/obj.svg" && grep -q "objective per iteration" "$WORK/obj.svg" || fail "--plot: no curve"
expect 2 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --max-iter 5 --plot "$WORK/no/dir/p.svg"
err_has "plot"
expect 3 -- "$PTREG" lddmm "$WORK/ellipse.csv" "$WORK/short.csv" --plot "$WORK/never.svg"
no_file "$WORK/never.svg"
finish
