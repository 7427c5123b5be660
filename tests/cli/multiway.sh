# ptreg multiway: five views of the aircraft, each turned anywhere, come back
# into the first view's frame; the same bytes for 1 and 2 threads and (with
# MPI) 2 ranks; an unrelated scan is reported lost, not forced in; --pairs,
# the pose graph written and read back (Open3D's layout); the real bunny
# scans within 0.5 degrees and 1 mm; bad inputs exit 3 naming the place.
. "$(dirname "$0")/lib.sh"

# views around the aircraft at 30 degrees of elevation; truth.txt: every
# scan's 4x4 onto the model frame, in ptreg's poses-file layout
views="5,0,3 1.5,4.8,3 -4,2.9,3 -4,-2.9,3 1.5,-4.8,3"
scans=()
: >"$WORK/truth.txt"
k=0
for v in $views; do
    expect 0 -- "$PTREG" synth --shape aircraft -o "$WORK/v$k.ply" --points 6000 --view "$v" --noise 0.002 \
        --max-angle 180 --max-translation 0.5 --truth-out "$WORK/t$k.txt" --seed $((k + 3))
    { echo "# pose $k"; cat "$WORK/t$k.txt"; } >>"$WORK/truth.txt"
    scans+=("$WORK/v$k.ply")
    k=$((k + 1))
done

# errors_below WHAT SCANS ROTATION TRANSLATION: every one of the SCANS
# scans' errors in the JSON on stdout below the bounds (a scan without one,
# or with null, fails)
errors_below() {
    checks json-all "$WORK/out" rotation_error_deg '<' "$3" --count "$2" --what "$1: rotation error (deg)"
    checks json-all "$WORK/out" translation_error '<' "$4" --count "$2" --what "$1: translation error"
}

expect 0 -- "$PTREG" multiway "${scans[@]}" --truth "$WORK/truth.txt" --json -o "$WORK/poses2.txt" \
    --pose-graph-out "$WORK/graph.json" --merged "$WORK/merged.ply" --merged-voxel 0.02 --threads 2
for key in '"scans"' '"edges"' '"placed"' '"edges_kept"' '"voxel"' '"pairs_ms"' '"graph_ms"' '"confidence"'; do
    out_has "$key"
done
has_file "$WORK/poses2.txt"; has_file "$WORK/graph.json"; has_file "$WORK/merged.ply"
errors_below multiway 5 0.5 0.01
grep -q '"placed":	false' "$WORK/out" && fail "multiway: a view was lost"
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["class_name"] != "PoseGraph")' "$WORK/graph.json" ||
    fail "graph.json is not a PoseGraph"

# 1 thread: the same poses; --html's page has every scan placed and the graph
expect 0 -- "$PTREG" multiway "${scans[@]}" -o "$WORK/poses1.txt" --threads 1 --html "$WORK/multiway.html"
cmp -s "$WORK/poses1.txt" "$WORK/poses2.txt" || fail "multiway: 1 and 2 threads differ"
python3 - "$WORK/multiway.html" <<'PYEOF' || fail "multiway --html: layers"
import json, re, sys
text = open(sys.argv[1]).read()
d = json.loads(re.search(r'id="ptreg-report">(.*?)</script>', text, re.S).group(1))
names = [l["name"] for l in d["layers"]]
assert [n.split(":")[0] for n in names[:5]] == ["scan %d" % i for i in range(5)], names
assert names[5:] == ["graph edges kept", "pairs left out"], names
assert d["layers"][5]["total"] == d["result"]["edges_kept"], d["layers"][5]
PYEOF

# each view with its most similar one (mean FPFH) and its successor: fewer pairs, every view placed
expect 0 -- "$PTREG" multiway "${scans[@]}" --pair-neighbors 1 --truth "$WORK/truth.txt" --json
pairs=$(grep -c '"source":' "$WORK/out")
[ "$pairs" -ge 4 ] && [ "$pairs" -lt 10 ] || fail "--pair-neighbors 1: $pairs candidate pairs"
errors_below "multiway --pair-neighbors" 5 0.5 0.01

# the solved graph read back: its edges and poses as the start, solved again
expect 0 -- "$PTREG" multiway "${scans[@]}" --pose-graph "$WORK/graph.json" --truth "$WORK/truth.txt" --json
errors_below "multiway --pose-graph" 5 0.5 0.01

# the neighbours' pairs only, a loop among them; then a scan of another object among
# them is lost, the others placed
printf '0 1\n1 2\n2 3\n3 4\n# and a loop\n3 0\n' >"$WORK/pairs.txt"
expect 0 -- "$PTREG" multiway "${scans[@]}" --pairs "$WORK/pairs.txt" --truth "$WORK/truth.txt" --json
[ "$(grep -c '"source":' "$WORK/out")" -eq 5 ] || fail "--pairs: not 5 candidate pairs"
errors_below "multiway --pairs" 5 0.5 0.01
expect 0 -- "$PTREG" synth --shape blob -o "$WORK/other.ply" --points 6000 --seed 9
expect 0 -- "$PTREG" multiway "${scans[@]:0:3}" "$WORK/other.ply" --json
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["scans"]; sys.exit(not (s[3]["placed"] is False and
    all(x["placed"] for x in s[:3])))' "$WORK/out" || fail "multiway: the blob was not reported lost alone"

if has_data; then
    # bun.conf: x_world = R(q)^T x_scan + t
    python3 - "$DATA/bunny/bun.conf" "$WORK/bunny_truth.txt" <<'EOF'
import sys
out = open(sys.argv[2], "w")
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 9 or f[0] != "bmesh" or f[1] not in ("bun000.ply", "bun045.ply"):
        continue
    t = [float(v) for v in f[2:5]]
    x, y, z, w = (float(v) for v in f[5:9])
    R = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    out.write(f"# pose {f[1]}\n")
    for r in range(3):
        out.write(" ".join(repr(R[c][r]) for c in range(3)) + f" {t[r]!r}\n")
    out.write("0 0 0 1\n")
EOF
    expect 0 -- "$PTREG" multiway "$DATA/bunny/bun000.ply" "$DATA/bunny/bun045.ply" \
        --truth "$WORK/bunny_truth.txt" --json
    errors_below "multiway on the bunny" 2 0.5 0.001
fi

if "$PTREG" --version | grep -q "mpi: yes" && command -v mpirun >/dev/null; then
    # Open MPI keeps its plugins' memory past MPI_Finalize (tests/CMakeLists.txt, cli_batch_mpi):
    # a sanitized build checks memory errors here, not leaks
    expect 0 -- env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        mpirun --oversubscribe --allow-run-as-root -n 2 "$PTREG" multiway "${scans[@]}" -o "$WORK/poses_mpi.txt" \
        --threads 1
    cmp -s "$WORK/poses1.txt" "$WORK/poses_mpi.txt" || fail "multiway: 2 ranks differ from one process"
else
    skip_section "multiway on 2 MPI ranks: ptreg without MPI or no mpirun"
fi

# bad inputs: exit 3 naming the file and the place, nothing written
printf '0 1\n1 7\n' >"$WORK/badpairs.txt"
expect 3 -- "$PTREG" multiway "${scans[@]}" --pairs "$WORK/badpairs.txt" -o "$WORK/never.txt"
err_has "badpairs.txt: line 2"; no_file "$WORK/never.txt"
python3 - "$WORK/graph.json" "$WORK/badgraph.json" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
g["edges"][-1]["target_node_id"] = 12
json.dump(g, open(sys.argv[2], "w"))
EOF
expect 3 -- "$PTREG" multiway "${scans[@]}" --pose-graph "$WORK/badgraph.json" -o "$WORK/never.txt"
err_has "badgraph.json"; err_has "edge"; no_file "$WORK/never.txt"
expect 3 -- "$PTREG" multiway "${scans[@]:0:2}" "$WORK/missing.ply" -o "$WORK/never.txt"; err_has "missing.ply"
printf '1 0 0 0\n0 1 0 0\n' >"$WORK/short.txt"
expect 3 -- "$PTREG" multiway "${scans[@]}" --truth "$WORK/short.txt"; err_has "short.txt"
expect 2 -- "$PTREG" multiway "${scans[@]}" --anchor 9; err_has "--anchor"
expect 2 -- "$PTREG" multiway "${scans[0]}"
expect 0 -- "$PTREG" multiway --help; out_has "spanning tree"
finish
