#!/bin/bash
# ptreg eval: every number of --json equal to a NumPy reference of the same
# definitions (eval_reference.py) to 1e-9 on TUM and KITTI trajectories with
# gaps, unequal lengths, clock offsets, jittered timestamps, a scaled
# estimate and a 3 km drive, and the KITTI metric equal to hand-made closed
# forms (eval_cases.py); the text and --html; bad files exit 3 naming the
# line (NaN, a matrix that is not rigid, a timestamp that goes back) with no
# output; usage errors exit 2.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
numpy_python || { echo "skipped: no python3 with numpy"; exit 77; }

expect 0 -- /usr/bin/python3 "$HERE/eval_cases.py" "$PTREG" "$WORK/cases"
out_has "0 mismatches"

# a small pair by hand: the estimate 0.1 off in x at every pose
cat >"$WORK/truth.txt" <<'EOF'
# timestamp tx ty tz qx qy qz qw
0.0 0 0 0 0 0 0 1
0.1 1 0 0 0 0 0 1
0.2 2 1 0 0 0 0 1
0.3 3 1 1 0 0 0 1
EOF
cat >"$WORK/est.txt" <<'EOF'
0.0 0.1 0 0 0 0 0 1
0.1 1.1 0 0 0 0 0 1
0.2 2.1 1 0 0 0 0 1
0.3 3.1 1 1 0 0 0 1
EOF
expect 0 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --align none
out_has "4 pairs by time"
out_has "ATE translation        rmse 0.1 "
expect 0 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --json
/usr/bin/python3 - "$WORK/out" <<'PY' || fail "se3 alignment of a shifted copy"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["align"] == "se3" and d["association"]["pairs"] == 4, d
assert d["ate"]["translation"]["max"] < 1e-12, d["ate"]
assert abs(d["alignment"]["translation"][0] + 0.1) < 1e-12, d["alignment"]
assert d["kitti"] is None and d["rpe"]["pairs"] == 3
PY
expect 0 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --html "$WORK/eval.html" --quiet
html_viewer && has_file "$WORK/eval.html"

# bad files: exit 3, the file and line named
printf '0 0 0 0 0 0 0 1\n0.1 nan 0 0 0 0 0 1\n' >"$WORK/nan.txt"
expect 3 -- "$PTREG" eval "$WORK/nan.txt" "$WORK/truth.txt"
err_has "nan.txt: line 2: not a TUM pose"
printf '1 0 0 0 0 1 0 0 0 0 1 0\n1 0 0 0 0 1 0 0 0 0 1.5 0\n' >"$WORK/shear.txt"
expect 3 -- "$PTREG" eval "$WORK/shear.txt" "$WORK/truth.txt"
err_has "shear.txt: line 2: not a KITTI pose (12 finite numbers, a rigid"
printf '0.2 0 0 0 0 0 0 1\n0.1 0 0 0 0 0 0 1\n' >"$WORK/back.txt"
expect 3 -- "$PTREG" eval "$WORK/back.txt" "$WORK/truth.txt"
err_has "back.txt: line 2: the timestamp 0.10000000000000001 does not come after the last one"
expect 3 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --offset 100
err_has "0 poses paired (by time, within --max-diff), 3 needed"
expect 3 -- "$PTREG" eval "$WORK/est.txt" "$WORK/missing.txt"
err_has "missing.txt: cannot be read"
# a line on the page: the plain alignment of a straight path is not determined
printf '0 0 0 0 0 0 0 1\n1 1 0 0 0 0 0 1\n2 2 0 0 0 0 0 1\n' >"$WORK/line.txt"
expect 3 -- "$PTREG" eval "$WORK/line.txt" "$WORK/line.txt"
err_has "lie on one line"
expect 0 -- "$PTREG" eval "$WORK/line.txt" "$WORK/line.txt" --align none --json

# usage
expect 2 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --align affine
expect 2 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --delta 1.5
err_has "not a whole number of frames"
expect 2 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --kitti-lengths 100,-5
expect 2 -- "$PTREG" eval "$WORK/est.txt" "$WORK/truth.txt" --max-diff 0
expect 2 -- "$PTREG" eval "$WORK/est.txt"
finish
