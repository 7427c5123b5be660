# ptreg index and ptreg icp --target-index: build, describe, register with
# every --nn method (the same bits), the walk statistics and index times in
# --json, degenerate models, and bad index files (exit 3, nothing written).
. "$(dirname "$0")/lib.sh"

expect 0 -- "$PTREG" synth --shape blob --model "$WORK/model.ply" --model-points 6000 -o "$WORK/scan.ply" \
    --points 4000 --truth-out "$WORK/truth.txt" --max-angle 8 --noise 0.002 --seed 5
expect 0 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/model.pti"
has_file "$WORK/model.pti"; out_has "Delaunay graph built"
expect 0 -- "$PTREG" info "$WORK/model.pti" --json
out_has '"points":	6000'; out_has '"delaunay":	true'; out_has '"delaunay_ms"'

# every method gives the same result; compare all but timings and labels
strip() { /usr/bin/python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps([d[k] for k in ("transformation", "rmse", "fitness", "pairs", "iterations", "mse")]))
PY
}
for nn in kdtree brute delaunay-zero delaunay-kdann delaunay-pnn delaunay-pnnopt auto; do
    expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/model.pti" --nn "$nn" --json --tol 0 \
        --max-iter 15
    strip "$WORK/out" >"$WORK/$nn.res" || fail "$nn: bad JSON"
    cmp -s "$WORK/kdtree.res" "$WORK/$nn.res" || fail "$nn differs from kdtree"
done
# the last run (auto) walked: statistics per pass, index times apart from time_ms
for key in '"nn":	"delaunay-pnnopt"' '"walk"' '"mean_steps"' '"histogram"' '"index_build_ms"' '"load_ms"' \
    '"origin":	"file"' '"nn_note":	""'; do
    out_has "$key"
done
/usr/bin/python3 -c "
import json, sys
d = json.load(open('$WORK/out'))
assert len(d['walk']) == d['iterations'] + 1, 'a walk record per pass'
assert all(w['queries'] == d['source_points'] and sum(w['histogram']) == w['queries'] for w in d['walk'])
assert d['index']['delaunay_ms'] > 0 and d['index_build_ms'] >= d['index']['delaunay_ms']
" || fail "walk statistics or index times in --json"

# TARGET with a Delaunay method: the index is built first, outside time_ms
expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --nn delaunay-pnn --tol 0 --max-iter 15 --json
out_has '"origin":	"built"'
strip "$WORK/out" >"$WORK/built.res"; cmp -s "$WORK/kdtree.res" "$WORK/built.res" || fail "built index differs"
expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/model.pti" --truth "$WORK/truth.txt"
out_has "index loaded"; out_has "walks:"; out_has "pose error vs truth"

# a model Qhull cannot triangulate: an index without a graph, and ICP says so
printf '0 0 0\n1 0 0\n0 1 0\n1 1 0\n0.5 0.5 0\n0.2 0.7 0\n0.7 0.1 0\n' >"$WORK/flat.xyz"
expect 0 -- "$PTREG" index "$WORK/flat.xyz" -o "$WORK/flat.pti"; out_has "no Delaunay graph"
printf '0.1 0.1 0.01\n0.9 0.1 0.01\n0.1 0.9 0.01\n0.6 0.6 0.01\n' >"$WORK/flat_scan.xyz"
expect 0 -- "$PTREG" icp "$WORK/flat_scan.xyz" --target-index "$WORK/flat.pti" --nn delaunay-kdann --json
out_has '"nn":	"kdtree"'; out_has 'delaunay-kdann asked for'
printf '0 0 0\n1 0 0\n0 1 0\n0 0 1\n0 0 0\n1 0 0\n' >"$WORK/few.xyz"
expect 0 -- "$PTREG" index "$WORK/few.xyz" -o "$WORK/few.pti"; out_has "4 distinct points (2 exact duplicates merged)"

# usage: TARGET and --target-index together, neither
expect 2 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --target-index "$WORK/model.pti"
expect 2 -- "$PTREG" icp "$WORK/scan.ply"
expect 2 -- "$PTREG" index "$WORK/model.ply"
expect 2 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/model.pti" --nn delaunay

# bad index files: exit 3, the file named, nothing written
size=$(stat -c %s "$WORK/model.pti")
head -c $((size / 2)) "$WORK/model.pti" >"$WORK/truncated.pti"
cp "$WORK/model.pti" "$WORK/corrupt.pti"
printf '\377' | dd of="$WORK/corrupt.pti" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
cp "$WORK/model.ply" "$WORK/foreign.pti"
cp "$WORK/model.pti" "$WORK/version.pti"
printf '\011' | dd of="$WORK/version.pti" bs=1 seek=8 conv=notrunc 2>/dev/null
for f in truncated corrupt foreign version; do
    expect 3 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/$f.pti" -o "$WORK/never.ply" -t "$WORK/never.txt"
    err_has "$f.pti"; no_file "$WORK/never.ply"; no_file "$WORK/never.txt"
    expect 3 -- "$PTREG" info "$WORK/$f.pti"
done
expect 3 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/corrupt.pti"; err_has "checksum"
expect 3 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/version.pti"; err_has "version 9"
expect 3 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/foreign.pti"; err_has "magic"
expect 3 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/missing.pti"; err_has "missing.pti"
# an index that cannot be written: exit 2 before the build, nothing left
expect 2 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/no/such/dir/m.pti"

expect 0 -- "$PTREG" help index; out_has "target-index"
expect 0 -- "$PTREG" icp --help; out_has "delaunay-pnnopt"
finish
