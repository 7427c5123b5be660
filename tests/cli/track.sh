#!/bin/bash
# ptreg track and ptreg synth --sequence: a short synthetic approach tracked
# within a tight pose error of the truth, an occlusion of two frames over
# within a frame of its end, --truth's errors, an unreadable frame reported
# and lost (no pose written), the stdin stream (the same poses as the files;
# truncated and foreign streams reported, leaving no output), --json's
# fields, the same bytes for 1 and 2 threads, the help's defaults, README's
# example (300 frames from no guess, within 0.05 degrees), usage errors.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
command -v "$PY" >/dev/null || { echo "skipped: no python3"; exit 77; }

# the first frame's true pose as a 4x4 matrix (--init): the tanker knows
# where the approach starts
first_pose() {
    "$PY" - "$1" <<'PYEOF'
import sys
v = [float(x) for x in open(sys.argv[1]).readline().split()]
tx, ty, tz, qx, qy, qz, qw = v[1:]
R = [[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
     [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
     [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]]
for i, t in enumerate((tx, ty, tz)):
    print(" ".join("%.17g" % x for x in R[i] + [t]))
print("0 0 0 1")
PYEOF
}

# 30 frames of 3000 points, frames 12 and 13 occluded; the model 5000 points
expect 0 -- "$PTREG" synth --sequence 30 --model "$WORK/model.ply" --model-points 5000 --points 3000 \
    --frames-dir "$WORK/frames" --truth-trajectory-out "$WORK/truth.txt" --occlusion 12,2
has_file "$WORK/frames/frame_00029.ply"
no_file "$WORK/frames/frame_00030.ply"
[ "$(wc -l <"$WORK/truth.txt")" -eq 30 ] || fail "the truth has $(wc -l <"$WORK/truth.txt") lines, not 30"
first_pose "$WORK/truth.txt" >"$WORK/init.txt"
# the same options give the same frames
expect 0 -- "$PTREG" synth --sequence 30 --points 3000 --frames-dir "$WORK/again" --occlusion 12,2
cmp -s "$WORK/frames/frame_00017.ply" "$WORK/again/frame_00017.ply" || fail "synth --sequence: frames differ"

# tracked: every frame but the occluded ones within 1% of the diagonal and
# 0.3 degrees; the occluded are lost, the first after them is not
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" \
    -o "$WORK/traj.txt" --states "$WORK/states.txt" --threads 2
out_has "tracked 28, recovered 0, lost 2"
"$PY" "$HERE/track_compare.py" "$WORK/traj.txt" "$WORK/truth.txt" --skip 12,13 --max-trans 0.05 --max-rot 0.3 \
    >"$WORK/cmp" || { fail "track: poses beyond the bounds"; cat "$WORK/cmp" >&2; }
[ "$(sed -n 13p "$WORK/states.txt" | cut -d' ' -f2)" = lost ] || fail "occluded frame 12 is not lost"
[ "$(sed -n 14p "$WORK/states.txt" | cut -d' ' -f2)" = lost ] || fail "occluded frame 13 is not lost"
[ "$(sed -n 15p "$WORK/states.txt" | cut -d' ' -f2)" != lost ] || fail "frame 14, after the occlusion, is lost"
grep -q '#' "$WORK/traj.txt" && fail "the TUM trajectory holds a comment"
[ "$(awk 'NF != 8' "$WORK/traj.txt" | wc -l)" -eq 0 ] || fail "a TUM line without 8 numbers"

# on a device (POCL; the CUDA stand-in when built): point-to-plane, the
# default, every frame's pose within 1e-6 of the CPU's
if has_opencl; then
    expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" --json
    cp "$WORK/out" "$WORK/track_cpu.json"
    track_devices=(opencl:0)
    bin=$(cd "$(dirname "$PTREG")" && pwd)
    [ -e "$bin/cuda_standin/libcuda.so.1" ] && track_devices+=(cuda:0)
    for device in "${track_devices[@]}"; do
        wrap=()
        [ "$device" = cuda:0 ] && wrap=(env PTREG_BUILD="$bin" "$HERE/../../scripts/with-cuda-standin.sh")
        expect 0 -- "${wrap[@]}" "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" \
            --json --device "$device"
        "$PY" - "$WORK/track_cpu.json" "$WORK/out" "$device" <<'PYEOF' || fail "track --device $device: not the CPU's poses"
import json, sys
from ptreg_checks import load_json, worst_abs_diff
cpu, dev = load_json(sys.argv[1]), load_json(sys.argv[2])
assert dev["device"] == sys.argv[3] and dev["method"] == "plane", (dev["device"], dev["method"])
assert [f["state"] for f in cpu["frames"]] == [f["state"] for f in dev["frames"]], "the frames' states differ"
d = worst_abs_diff([f["pose"] for f in cpu["frames"]], [f["pose"] for f in dev["frames"]], "poses")
assert d <= 1e-6, f"poses {d:.3g} apart (tol 1e-6)"
PYEOF
    done
fi

# --truth: each frame's error and the summary's median and max, in the
# JSON and the text; the poses of the run above
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" --truth "$WORK/truth.txt" \
    --json
checks json-all "$WORK/out" translation_error '<' 0.05 --count 30
checks json "$WORK/out" summary.error.frames == 30
checks json "$WORK/out" summary.error.rotation_deg_median '<' 0.3
checks json "$WORK/out" summary.error.translation_median '<' 0.05
"$PY" - "$WORK/out" "$WORK/traj.txt" "$WORK/truth.txt" "$HERE" <<'PYEOF' || fail "track --truth: not track_compare's errors"
import json, sys
sys.path.insert(0, sys.argv[4])
from track_compare import compare
from ptreg_checks import near
d = json.load(open(sys.argv[1]))
rows = compare(sys.argv[2], sys.argv[3])
for f, (i, t, trans, rot, _) in zip(d["frames"], rows):
    near(f["rotation_error_deg"], rot, 1e-3, f"frame {i} rotation")
    near(f["translation_error"], trans, 1e-5, f"frame {i} translation")
PYEOF
expect 0 -- "$PTREG" track "$WORK/model.ply" "$WORK"/frames/frame_0000[0-2].ply --init "$WORK/init.txt" \
    --truth "$WORK/truth.txt"
checks text "$WORK/out" 'error vs truth \(3 frames\): rotation median [^ ]+, max[ ]([^ ]+) deg' '<' 0.3
# a bad --truth: its file and line, exit 3, before any work; no pose at any frame's time: exit 3
printf '0 0 0 0 0 0 0 1\n0.1 1 2 3 x 0 0 1\n' >"$WORK/badtruth.txt"
expect 3 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --truth "$WORK/badtruth.txt" -o "$WORK/bt.txt"
err_has "badtruth.txt: line 2"
no_file "$WORK/bt.txt"
expect 3 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --truth "$WORK/nothere.txt"
printf '99 0 0 0 0 0 0 1\n' >"$WORK/latetruth.txt"
expect 3 -- "$PTREG" track "$WORK/model.ply" "$WORK/frames/frame_00000.ply" --init "$WORK/init.txt" \
    --truth "$WORK/latetruth.txt" -o "$WORK/lt.txt"
err_has "no pose at any frame's time"
no_file "$WORK/lt.txt"

# the same bytes for 1 and 2 threads (and with --html, whose page shows the
# model, the last frame, the sensor's path through every frame and the two
# frames lost); constant velocity and none both track
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" \
    -o "$WORK/traj1.txt" --threads 1 --html "$WORK/track.html"
cmp -s "$WORK/traj.txt" "$WORK/traj1.txt" || fail "track: 1 and 2 threads differ"
"$PY" - "$WORK/track.html" <<'PYEOF' || fail "track --html: layers"
import json, re, sys
text = open(sys.argv[1]).read()
d = json.loads(re.search(r'id="ptreg-report">(.*?)</script>', text, re.S).group(1))
layers = {l["name"]: l for l in d["layers"]}
assert list(layers) == ["model", "last frame", "sensor path", "frames lost"], list(layers)
assert layers["sensor path"]["kind"] == "paths" and layers["sensor path"]["length"] == 30
assert layers["frames lost"]["total"] == 2 and d["result"]["command"] == "track"
assert [c["measure"] for c in d["curves"]] == ["fitness"] and len(d["curves"][0]["values"]) == 30
PYEOF
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" \
    -o "$WORK/none.txt" --predict none
"$PY" "$HERE/track_compare.py" "$WORK/none.txt" "$WORK/truth.txt" --skip 12,13 --max-trans 0.05 --max-rot 0.3 \
    >"$WORK/cmp" || { fail "track --predict none: poses beyond the bounds"; cat "$WORK/cmp" >&2; }

# --json: per frame and the summary
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --init "$WORK/init.txt" --json
"$PY" - "$WORK/out" <<'PYEOF' || fail "track --json: fields"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["command"] == "track" and len(d["frames"]) == 30, d.keys()
for f in d["frames"]:
    for k in ("time", "state", "iterations", "fitness", "rmse", "latency_ms", "pose", "points"):
        assert k in f, k
s = d["summary"]
assert (s["tracked"], s["recovered"], s["lost"]) == (28, 0, 2), s
for k in ("p50", "p95", "p99", "max"):
    assert s["latency_ms"][k] >= 0
assert s["frames_per_s"] > 0
PYEOF

# an unreadable frame (5) and an empty one (7): reported, lost, the run goes on
mkdir -p "$WORK/broken"
cp "$WORK/frames"/*.ply "$WORK/broken/"
echo "not a cloud" >"$WORK/broken/frame_00005.ply"
printf 'ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n' \
    >"$WORK/broken/frame_00007.ply"
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/broken" --init "$WORK/init.txt" \
    -o "$WORK/btraj.txt" --states "$WORK/bstates.txt"
err_has "frame 5: .*frame_00005.ply"
err_has "frame 7"
[ "$(sed -n 6p "$WORK/bstates.txt" | cut -d' ' -f2)" = lost ] || fail "the unreadable frame is not lost"
[ "$(sed -n 8p "$WORK/bstates.txt" | cut -d' ' -f2)" = lost ] || fail "the empty frame is not lost"
"$PY" "$HERE/track_compare.py" "$WORK/btraj.txt" "$WORK/truth.txt" --skip 5,7,12,13 --max-trans 0.05 \
    --max-rot 0.3 >"$WORK/cmp" || { fail "track: poses beyond the bounds around a lost frame"; cat "$WORK/cmp" >&2; }
# the unreadable frame has no pose, so no trajectory line (never the
# identity or a guess); nor has the PLY without points (read as unusable)
grep -q '^0\.500000 ' "$WORK/btraj.txt" && fail "the unreadable frame 5 has a trajectory line"
grep -q '^0\.700000 ' "$WORK/btraj.txt" && fail "the pointless frame 7 has a trajectory line"
[ "$(wc -l <"$WORK/btraj.txt")" -eq 28 ] || fail "broken frames: $(wc -l <"$WORK/btraj.txt") poses, not 28"
[ "$(wc -l <"$WORK/bstates.txt")" -eq 30 ] || fail "broken frames: $(wc -l <"$WORK/bstates.txt") states, not 30"
# an unreadable first frame: lost with no line, not the identity at exit 0
mkdir -p "$WORK/badfirst"
cp "$WORK"/frames/frame_0000[0-2].ply "$WORK/badfirst/"
echo "not a cloud" >"$WORK/badfirst/frame_00000.ply"
expect 0 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/badfirst" -o "$WORK/bf.txt" --states "$WORK/bfs.txt" \
    --json
checks json "$WORK/out" summary.unreadable == 1
checks json "$WORK/out" summary.lost '>=' 1
"$PY" - "$WORK/out" <<'PYEOF' || fail "track --json: the unreadable frame's pose is not null"
import json, sys
f = json.load(open(sys.argv[1]))["frames"][0]
assert f["unreadable"] is True and f["pose"] is None and f["state"] == "lost", f
PYEOF
grep -q '^0\.000000 ' "$WORK/bf.txt" && fail "the unreadable first frame was written as a pose"
[ "$(head -1 "$WORK/bfs.txt")" = "0.000000 lost" ] || fail "the unreadable first frame is not lost in --states"
# frame files on the command line: the same as the folder
expect 0 -- "$PTREG" track "$WORK/model.ply" "$WORK"/frames/frame_0000[0-9].ply --init "$WORK/init.txt" \
    -o "$WORK/ftraj.txt"
head -10 "$WORK/traj.txt" | cmp -s - "$WORK/ftraj.txt" || fail "track FRAME...: not the folder's poses"
# no frame readable at all: exit 3
echo "junk" >"$WORK/junk.xyz"
expect 3 -- "$PTREG" track "$WORK/model.ply" "$WORK/junk.xyz" "$WORK/missing.ply"
err_has "no frame could be read"

# the stdin stream: the same poses as the files
"$PY" "$HERE/track_stream.py" "$WORK"/frames/*.ply >"$WORK/stream.ptf"
expect 0 -- "$PTREG" track "$WORK/model.ply" - --init "$WORK/init.txt" -o "$WORK/straj.txt" <"$WORK/stream.ptf"
cmp -s "$WORK/traj.txt" "$WORK/straj.txt" || fail "track -: not the files' poses"
# truncated: reported, exit 3, and no output at all (never an empty or a
# partial trajectory); an existing file is left as it was
head -c -7 "$WORK/stream.ptf" >"$WORK/cut.ptf"
expect 3 -- "$PTREG" track "$WORK/model.ply" - --init "$WORK/init.txt" -o "$WORK/ctraj.txt" \
    --states "$WORK/cstates.txt" <"$WORK/cut.ptf"
err_has "frame 29 at byte .*truncated"
no_file "$WORK/ctraj.txt"
no_file "$WORK/cstates.txt"
echo "kept" >"$WORK/old.txt"
expect 3 -- "$PTREG" track "$WORK/model.ply" - -o "$WORK/old.txt" <"$WORK/cut.ptf"
[ "$(cat "$WORK/old.txt")" = kept ] || fail "a failed stream replaced an existing trajectory"
# a target that is no regular file is written directly: /dev/null stays itself
expect 0 -- "$PTREG" track "$WORK/model.ply" "$WORK"/frames/frame_0000[0-1].ply --init "$WORK/init.txt" \
    -o /dev/null --states /dev/null
[ -c /dev/null ] || fail "track -o /dev/null replaced the device"
# a stream that breaks in its first frame: no file either
head -c 30 "$WORK/stream.ptf" >"$WORK/cut0.ptf"
expect 3 -- "$PTREG" track "$WORK/model.ply" - -o "$WORK/c0.txt" <"$WORK/cut0.ptf"
no_file "$WORK/c0.txt"
ls -a "$WORK" | grep -q '^\.ptreg-tmp' && fail "a temporary file was left behind"
# a count beyond the stream is never trusted: a header claiming 2^40 points
printf 'PTF1\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04' >"$WORK/huge.ptf"
expect 3 -- "$PTREG" track "$WORK/model.ply" - <"$WORK/huge.ptf"
err_has "truncated: 0 of its 1099511627776 points"
printf 'PLY1 not a stream at all' >"$WORK/foreign.ptf"
expect 3 -- "$PTREG" track "$WORK/model.ply" - <"$WORK/foreign.ptf"
err_has "no \"PTF1\" magic"
# an empty stream: no frame
expect 3 -- "$PTREG" track "$WORK/model.ply" - </dev/null
# the model as an index
expect 0 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/model.pti"
expect 0 -- "$PTREG" track "$WORK/model.pti" "$WORK"/frames/frame_0000[0-4].ply --init "$WORK/init.txt" \
    -o "$WORK/itraj.txt"
head -5 "$WORK/truth.txt" >"$WORK/truth5.txt"
"$PY" "$HERE/track_compare.py" "$WORK/itraj.txt" "$WORK/truth5.txt" --max-trans 0.05 --max-rot 0.3 \
    >"$WORK/cmp" || { fail "track MODEL.pti: poses beyond the bounds"; cat "$WORK/cmp" >&2; }

# no initial guess: global registration finds the blob (a tight --max-rmse keeps a
# flipped fit out: the default, 2% of the diagonal, would take it), then tracking
expect 0 -- "$PTREG" synth --sequence 5 --shape blob --model "$WORK/blob.ply" --model-points 20000 --points 3000 \
    --approach 3,2.8 --frames-dir "$WORK/bseq" --truth-trajectory-out "$WORK/btruth.txt"
expect 0 -- "$PTREG" track "$WORK/blob.ply" --frames "$WORK/bseq" --max-rmse 0.03 -o "$WORK/rtraj.txt" \
    --states "$WORK/rstates.txt"
grep -q "recovered" "$WORK/rstates.txt" || fail "track without a guess: nothing recovered"
first=$(awk '$2 != "lost" {print NR - 1; exit}' "$WORK/rstates.txt")
[ "$(tail -n 1 "$WORK/rstates.txt" | cut -d' ' -f2)" = tracked ] || fail "track after a recovery: not tracked"
skip=$(seq -s, 0 $((${first:-5} - 1)))
"$PY" "$HERE/track_compare.py" "$WORK/rtraj.txt" "$WORK/btruth.txt" --skip "$skip" --max-trans 0.05 --max-rot 0.5 \
    >"$WORK/cmp" || { fail "track after a recovery: poses beyond the bounds"; cat "$WORK/cmp" >&2; }
expect 0 -- "$PTREG" track "$WORK/blob.ply" --frames "$WORK/bseq" --max-rmse 0.03 --no-recover --states "$WORK/n.txt"
[ "$(grep -c lost "$WORK/n.txt")" -eq 5 ] || fail "track --no-recover without a guess: not every frame lost"

# the help says what a run does: ICP's defaults as the tracker's
expect 0 -- "$PTREG" help track
out_has "point|plane|gicp|symmetric; default plane)"
out_has "max-dist D .*default 5% of the model's bounding-box diagonal"
grep -q "max-dist D .*no limit" "$WORK/out" && fail "help track: --max-dist says no limit"

# README.md's tracking example, as written there (and in 'ptreg help track'):
# 300 frames of the aircraft from no guess (the first recovered, never the
# mirrored pose: it was 179 degrees off), every frame within 0.05 degrees
# and 0.01 of the truth
readme=$(cd "$HERE/../.." && pwd)/README.md
synth_line=$(grep -o '^ptreg synth --sequence 300 [^#]*' "$readme" | sed 's/ *$//')
track_line=$(grep -o '^ptreg track model.ply --frames frames [^#]*' "$readme" | sed 's/ *$//')
[ -n "$synth_line" ] && [ -n "$track_line" ] || fail "README.md: the tracking example is not found"
"$PTREG" help track >"$WORK/help.txt"
grep -qxF "  $synth_line" "$WORK/help.txt" || fail "help track's example is not README's: $synth_line"
grep -qxF "  $track_line" "$WORK/help.txt" || fail "help track's example is not README's: $track_line"
case "$track_line" in *--truth*) ;; *) fail "README's track example has no --truth" ;; esac
mkdir -p "$WORK/readme"
(cd "$WORK/readme" && PATH="$(dirname "$PTREG"):$PATH" && eval "$synth_line" >/dev/null 2>"$WORK/err") ||
    fail "README: $synth_line"
(cd "$WORK/readme" && PATH="$(dirname "$PTREG"):$PATH" && eval "$track_line" >"$WORK/out" 2>"$WORK/err") ||
    fail "README: $track_line"
checks json "$WORK/out" summary.frames == 300
checks json "$WORK/out" summary.lost == 0
checks json-all "$WORK/out" rotation_error_deg '<=' 0.05 --count 300
checks json-all "$WORK/out" translation_error '<=' 0.01 --count 300
checks json "$WORK/out" summary.error.rotation_deg_max '<=' 0.05
"$PY" "$HERE/track_compare.py" "$WORK/readme/trajectory.txt" "$WORK/readme/truth.txt" --max-trans 0.01 \
    --max-rot 0.05 >"$WORK/cmp" || { fail "README's track example: poses beyond 0.05 deg"; cat "$WORK/cmp" >&2; }
rm -rf "$WORK/readme/frames"

# only what the sensor sees: a noisy one-sided frame (0.2% of the diagonal)
# registered from its truth lands nearer it against the visible side
# (icp --visible-only; track's default), and track --voxel thins the frames
expect 0 -- "$PTREG" synth --sequence 2 --approach 3,2.99 --model "$WORK/vmodel.ply" --model-points 20000 --points 6000 \
    --noise 0.011 --frames-dir "$WORK/vframes" --truth-trajectory-out "$WORK/vtruth.txt" --seed 5
first_pose "$WORK/vtruth.txt" >"$WORK/vinit.txt"
expect 0 -- "$PTREG" icp "$WORK/vframes/frame_00000.ply" "$WORK/vmodel.ply" --method plane --init "$WORK/vinit.txt" \
    --truth "$WORK/vinit.txt" --json
cp "$WORK/out" "$WORK/whole.json"
expect 0 -- "$PTREG" icp "$WORK/vframes/frame_00000.ply" "$WORK/vmodel.ply" --method plane --init "$WORK/vinit.txt" \
    --truth "$WORK/vinit.txt" --json --visible-only --sensor-origin 0,0,0
"$PY" - "$WORK/whole.json" "$WORK/out" <<'PYEOF' || fail "icp --visible-only: not nearer the truth"
import json, sys
whole, seen = (json.load(open(p))["translation_error"] for p in sys.argv[1:])
assert seen < 0.7 * whole, (seen, whole)
PYEOF
expect 0 -- "$PTREG" track "$WORK/vmodel.ply" --frames "$WORK/vframes" --init "$WORK/vinit.txt" --max-rmse 0.05 \
    --voxel 0.05 --json
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["visible_only"] is True' "$WORK/out" ||
    fail "track: not visible_only with the model's normals"
checks json "$WORK/out" voxel == 0.05
checks json-all "$WORK/out" points '<' 3000 --count 2
expect 0 -- "$PTREG" track "$WORK/model.pti" "$WORK"/frames/frame_00000.ply --init "$WORK/init.txt" --json
"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["visible_only"] is False' "$WORK/out" ||
    fail "track: visible_only with a model that has no normals"
expect 2 -- "$PTREG" icp "$WORK/vframes/frame_00000.ply" "$WORK/vmodel.ply" --sensor-origin 0,0,0
expect 2 -- "$PTREG" icp "$WORK/vframes/frame_00000.ply" --target-index "$WORK/model.pti" --visible-only
expect 2 -- "$PTREG" icp "$WORK/vframes/frame_00000.ply" "$WORK/frames/frame_00000.ply" --visible-only
err_has "needs TARGET's own normals"
expect 2 -- "$PTREG" track "$WORK/vmodel.ply" --frames "$WORK/vframes" --visible-only 2
expect 2 -- "$PTREG" track "$WORK/vmodel.ply" --frames "$WORK/vframes" --voxel -1
expect 2 -- "$PTREG" track "$WORK/vmodel.ply" --frames "$WORK/vframes" --sensor-origin 0,nan,0

# usage
expect 2 -- "$PTREG" track "$WORK/model.ply"
err_has "no frames"
expect 2 -- "$PTREG" track "$WORK/model.ply" "$WORK/frames/frame_00000.ply" --frames "$WORK/frames"
expect 2 -- "$PTREG" track "$WORK/model.ply" - "$WORK/frames/frame_00000.ply"
expect 2 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --predict sideways
expect 2 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/frames" --min-fitness 2
expect 3 -- "$PTREG" track "$WORK/nothing.ply" --frames "$WORK/frames"
expect 3 -- "$PTREG" track "$WORK/model.ply" --frames "$WORK/nowhere"
expect 2 -- "$PTREG" synth --sequence 3
err_has "nothing to write"
expect 2 -- "$PTREG" synth --frames-dir "$WORK/x" -o "$WORK/s.ply"
expect 2 -- "$PTREG" synth --sequence 3 --frames-dir "$WORK/x" --occlusion -1
expect 2 -- "$PTREG" synth --sequence 3 --frames-dir "$WORK/x" --view 1,2,3
finish
