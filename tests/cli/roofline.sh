#!/bin/bash
# bench/roofline.py on small inputs (issue 31): every kernel of its MODELS
# timed on 1 and 2 threads by bench/roofline_kernels, a finite positive
# fraction of a named bound for each, the table and the SVG plot (well-
# formed XML, a point per kernel); an unknown kernel is refused.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(dirname "$PTREG")
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
[ -x "$BUILD/bench/roofline_kernels" ] || { fail "no $BUILD/bench/roofline_kernels"; exit 1; }
command -v cc >/dev/null || { echo "skipped: no C compiler for the probes"; exit 77; }

if ! "$PY" "$ROOT/bench/roofline.py" --build "$BUILD" --work "$WORK/probes" --quick --rounds 1 --reps 1 \
    --json "$WORK/r.json" --svg "$WORK/r.svg" --markdown >"$WORK/table.md" 2>"$WORK/err"; then
    fail "roofline.py failed: $(head -5 "$WORK/err")"
fi
"$PY" - "$ROOT/bench" "$WORK" <<'PYEOF' || fail "the roofline's output"
import json, math, sys
import xml.etree.ElementTree as ET
sys.path.insert(0, sys.argv[1])
import roofline
work = sys.argv[2]
r = json.load(open(work + "/r.json"))
rows = {row["kernel"]: row for row in r["rows"]}
missing = set(roofline.MODELS) - set(rows)
assert not missing, f"kernels not measured: {missing}"
for name, row in rows.items():
    for t in ("1", "2"):
        p = row["per_threads"][t]
        assert p["bound"] in ("compute", "memory", "random"), (name, p)
        assert math.isfinite(p["fraction"]) and p["fraction"] > 0, (name, p)
        assert p["ns_per_unit"] > 0 and p["bound_ns"] > 0, (name, p)
lim = r["limits"]
assert lim["fp32_vector"] > 1e9 and lim["bandwidth"]["1"] > 1e8 and len(lim["random"]) == 3, lim
svg = ET.parse(work + "/r.svg").getroot()
circles = [e for e in svg.iter() if e.tag.endswith("circle")]
assert len(circles) == len(roofline.MODELS), len(circles)
table = open(work + "/table.md").read()
for name in roofline.MODELS:
    assert f"| {name} |" in table, name
PYEOF

"$PY" "$ROOT/bench/roofline.py" --build "$BUILD" --kernels emicp_pairs,nothing --quick >"$WORK/out" 2>"$WORK/err"
[ $? -ne 0 ] && grep -q "unknown kernel(s) nothing" "$WORK/err" || fail "an unknown kernel was not refused"
[ "$failures" -eq 0 ] || exit 1
echo "roofline: all checks passed"
