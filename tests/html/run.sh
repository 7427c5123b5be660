#!/usr/bin/env bash
# One browser test of the HTML reports (tests/html/README.md): makes small
# synthetic data with `ptreg synth` (or Python), writes the report of KIND
# with the CLI's --html, and opens it in headless Chromium with
# check_report.mjs, with what that kind's page must show.
# usage: tests/html/run.sh KIND PTREG
# KIND: icp, icp_large (the 40k/30k demo's report: <= 3 MB, ready < 2 s),
# register, emicp, view, multiway, track, harris3d, lddmm, warp, batch, fpfh, normals;
# checker: the checker fails a page with planted defects, naming each.
# Exit: 0 passed, 1 failed, 77 skipped (no node or Chromium, or a ptreg
# built without the report viewer).
set -u
KIND=${1:?usage: run.sh KIND PTREG}
PTREG=${2:?usage: run.sh KIND PTREG}
HERE=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
die() { echo "FAIL: html_$KIND: $*" >&2; exit 1; }
command -v node >/dev/null || skip "no node (Debian's nodejs; \`make test-deps\` installs it)"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PTREG_TUNE_CACHE=off
R=$WORK/$KIND.html

# ptreg ARGS...: a step of the test; its output shown only when it fails.
# A ptreg built without three.js says so: the kind is skipped, not failed.
ptreg() {
    if ! "$PTREG" "$@" >"$WORK/out" 2>"$WORK/err"; then
        grep -q "built without the report viewer" "$WORK/err" && skip "$(cat "$WORK/err")"
        sed 's/^/  /' "$WORK/err" >&2
        die "ptreg $* failed"
    fi
}

# what every registration's page shows: the target, the source before and
# after, the after coloured by its distance to the target (the bar = the JSON's)
REGISTRATION=(--layer target --layer "source before" --layer "source after"
              --colorbar "source after=distance_to_target")

aircraft() { # POINTS MODEL_POINTS: scan.ply onto model.ply, a known pose
    ptreg synth --shape aircraft --model "$WORK/model.ply" --model-points "$2" -o "$WORK/scan.ply" --points "$1" \
        --max-angle 10 --noise 0.002 --truth-out "$WORK/truth.txt" --seed 1
}

case $KIND in
icp)
    aircraft 3000 8000
    ptreg icp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 100 --html "$R"
    CHECKS=("${REGISTRATION[@]}" --curves 1) ;;
icp_large)
    # the demo's run (make demo): what the first report a reader opens must
    # weigh and how soon it must show
    aircraft 30000 40000
    ptreg icp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 100 --truth "$WORK/truth.txt" --html "$R"
    CHECKS=("${REGISTRATION[@]}" --curves 1 --max-bytes 3000000 --max-open-ms "${PTREG_HTML_MAX_OPEN_MS:-2000}") ;;
emicp)
    aircraft 1500 3000
    ptreg emicp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 30 --html "$R"
    CHECKS=("${REGISTRATION[@]}" --curves 1) ;;
register)
    # tests/cli/report.sh's blob, turned anywhere
    ptreg synth --shape blob --model "$WORK/model.ply" --model-points 8000 -o "$WORK/scan.ply" --points 6000 \
        --max-angle 180 --noise 0.001 --seed 6
    ptreg register "$WORK/scan.ply" "$WORK/model.ply" --html "$R"
    CHECKS=("${REGISTRATION[@]}" --layer "matches kept" --kind lines) ;;
view)
    # a registration's result over its target, coloured by the distances,
    # which must be icp's own (the page has no JSON of its own)
    aircraft 3000 8000
    ptreg icp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 100 -t "$WORK/T.txt" --json --html "$WORK/icp.html"
    cp "$WORK/out" "$WORK/icp.json"
    ptreg view "$WORK/scan.ply" "$WORK/model.ply" --transform "$WORK/T.txt" --distance -o "$R"
    CHECKS=("${REGISTRATION[@]}" --result "$WORK/icp.json") ;;
multiway)
    # three views of the aircraft, each turned anywhere
    scans=()
    for v in 5,0,3 -4,2.9,3 1.5,-4.8,3; do
        k=${#scans[@]}
        ptreg synth --shape aircraft -o "$WORK/v$k.ply" --points 3000 --view "$v" --noise 0.002 --max-angle 180 \
            --max-translation 0.5 --seed $((k + 3))
        scans+=("$WORK/v$k.ply")
    done
    ptreg multiway "${scans[@]}" --html "$R"
    CHECKS=(--kind points=3 --layer "graph edges kept" --kind lines) ;;
track)
    # frames 5 and 6 occluded: lost, drawn where the sensor was
    ptreg synth --sequence 10 --model "$WORK/model.ply" --model-points 5000 --points 2000 \
        --frames-dir "$WORK/frames" --truth-trajectory-out "$WORK/truth.txt" --occlusion 5,2
    # the first true pose (TUM: t x y z qx qy qz qw) as the 4x4 to start from
    awk 'NR == 1 { x=$5; y=$6; z=$7; w=$8
        printf "%.17g %.17g %.17g %s\n", 1-2*(y*y+z*z), 2*(x*y-z*w), 2*(x*z+y*w), $2
        printf "%.17g %.17g %.17g %s\n", 2*(x*y+z*w), 1-2*(x*x+z*z), 2*(y*z-x*w), $3
        printf "%.17g %.17g %.17g %s\n", 2*(x*z-y*w), 2*(y*z+x*w), 1-2*(x*x+y*y), $4
        print "0 0 0 1" }' "$WORK/truth.txt" >"$WORK/init.txt"
    ptreg track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" --html "$R"
    CHECKS=(--layer model --layer "last frame" --layer "sensor path" --layer "frames lost" --kind paths --curves 1) ;;
odometry)
    # a short generated drive: the local map at the end and the sensor's path over it
    ptreg synth --lidar-sequence 20 --beams 16 --azimuth-step 0.8 --frames-dir "$WORK/seq"
    ptreg odometry --frames "$WORK/seq/velodyne" --html "$R"
    CHECKS=(--layer map --layer trajectory --kind paths --curves 1) ;;
localize)
    # the same drive localized in a map of it in UTM-sized coordinates: the submap and the path
    ptreg synth --lidar-sequence 20 --beams 16 --azimuth-step 0.8 --frames-dir "$WORK/seq" \
        --lidar-map "$WORK/map.las" --origin 500000,5400000,100
    ptreg localize "$WORK/map.las" --frames "$WORK/seq/velodyne" --init 500030,5400000,100.1 --html "$R"
    CHECKS=(--layer map --layer trajectory --kind paths --curves 1) ;;
harris3d)
    # the box phantom the failure sweeps use: 8 corners
    python3 "$HERE/../cli/small_inputs.py" "$WORK" || die "making the volume"
    ptreg harris3d "$WORK/box_24x24x24_uint8.raw" --html "$R"
    # three orthogonal slices through the centre, the keypoints by score
    CHECKS=(--kind slice=3 --layer keypoints) ;;
lddmm | warp)
    # tests/cli/lddmm.sh's ellipse onto a circle, 40 landmarks; for warp, points inside the ellipse
    python3 - "$WORK" <<'PY' || die "making the landmarks"
import math, sys
n = 40
for name, a, b in (("ellipse", 1.5, 0.6), ("circle", 1.0, 1.0)):
    with open(f"{sys.argv[1]}/{name}.csv", "w") as f:
        f.write("x,y,z\n")
        for i in range(n):
            f.write("%.9g,%.9g,0\n" % (a * math.cos(2 * math.pi * i / n), b * math.sin(2 * math.pi * i / n)))
with open(f"{sys.argv[1]}/inside.csv", "w") as f:
    f.write("x,y,z\n" + "".join("%.9g,%.9g,0\n" % (r * math.cos(0.1 * k), 0.4 * r * math.sin(0.1 * k))
                                 for r in (0.3, 0.6, 0.9) for k in range(63)))
PY
    if [ "$KIND" = lddmm ]; then
        ptreg lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --max-iter 20 --html "$R"
        # the landmarks' paths along the flow; the objective per iteration
        CHECKS=(--layer template --layer target --layer paths --kind paths --curves 1)
    else
        ptreg lddmm "$WORK/ellipse.csv" "$WORK/circle.csv" --sigma 0.3 --max-iter 20 -o "$WORK/r.vtk"
        ptreg warp "$WORK/r.vtk" "$WORK/inside.csv" -o "$WORK/w.ply" --html "$R"
        # the points before and after and their paths along the flow
        CHECKS=(--layer "points before" --kind paths)
    fi ;;
normals)
    # the cloud by curvature, segments along the normals
    ptreg synth --shape blob -o "$WORK/blob.ply" --points 3000 --seed 1
    ptreg normals "$WORK/blob.ply" --k 10 -o "$WORK/n.ply" --html "$R"
    CHECKS=(--layer normals --kind lines) ;;
batch)
    # an orientation map of a small polycrystal: coloured by orientation, with its key
    ptreg synth --shape apt-polycrystal -o "$WORK/al.pos" --grains 4 --box 6 --seed 1
    ptreg batch "$WORK/al.pos" -o "$WORK/o.npy" --radius 0.35 --html "$R"
    CHECKS=(--layer atoms --key) ;;
fpfh)
    ptreg synth --shape blob -o "$WORK/blob.ply" --points 3000 --seed 1
    ptreg fpfh "$WORK/blob.ply" --k 10 -o "$WORK/f.csv" --html "$R"
    # the cloud coloured by each descriptor's distance to the mean descriptor
    CHECKS=(--layer cloud) ;;
checker)
    # the checker itself: an icp page with a defect planted for each check,
    # which must fail each, naming it (below)
    aircraft 1000 3000
    ptreg icp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 30 --html "$WORK/good.html"
    python3 - "$WORK/good.html" "$R" <<'PY' || die "planting the defects"
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
head = '<script type="application/json" id="ptreg-report">'
m = re.search(re.escape(head) + r"(.*?)</script>", page, re.S)
d = json.loads(m.group(1))
d["layers"][0]["color"] = "#ffffff"                 # the target drawn as the background: not seen
d["result"]["distance_to_target"]["max"] *= 2       # the bar's max no longer the JSON's
text = json.dumps(d).replace("<", "\\u003c")
page = page[:m.start(1)] + text + page[m.end(1):]
planted = ('<img src="http://192.0.2.1/planted.png">'                  # a request to the network
           '<script>console.error("planted error")</script>'           # an error on the console
           # every checkbox's change swallowed before the viewer sees it: the toggles do nothing
           '<script>document.addEventListener("change", (e) => e.stopImmediatePropagation(), true)</script>'
           # and the slider's input: the point size stays
           '<script>document.addEventListener("input", (e) => e.stopImmediatePropagation(), true)</script>')
page = page.replace("<body>", "<body>" + planted, 1)
open(sys.argv[2], "w", encoding="utf-8").write(page)
PY
    CHECKS=("${REGISTRATION[@]}") ;;
*)
    echo "run.sh: unknown kind '$KIND'" >&2
    exit 2 ;;
esac

[ -s "$R" ] || die "ptreg wrote no report $R"
# the canvas as drawn, kept beside the test's output when a check fails
SHOT=${PTREG_HTML_SHOTS:-$PWD}/html_$KIND.png
if [ "$KIND" = checker ]; then
    node "$HERE/check_report.mjs" "$R" "${CHECKS[@]}" 2>"$WORK/fails"
    rc=$?
    cat "$WORK/fails"
    [ "$rc" -eq 77 ] && exit 77
    [ "$rc" -eq 1 ] || die "the checker passed a page with planted defects (exit $rc)"
    for want in "network: the page asked for http://192.0.2.1/planted.png" "console: planted error" \
        "drawn: layer 'target'" "colour bar: 'source after' max" "toggle: layer 'source before'" "point size: "; do
        grep -qF -- "$want" "$WORK/fails" || die "the checker did not report '$want'"
    done
    echo "every planted defect reported"
    exit 0
fi
node "$HERE/check_report.mjs" "$R" "${CHECKS[@]}" --screenshot "$WORK/shot.png"
rc=$?
if [ "$rc" -eq 1 ]; then
    cp "$WORK/shot.png" "$SHOT" 2>/dev/null && echo "the canvas as first drawn: $SHOT" >&2
    cp "$R" "${SHOT%.png}.html" 2>/dev/null && echo "the report: ${SHOT%.png}.html" >&2
fi
exit "$rc"
