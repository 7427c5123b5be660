# ptreg synth + icp end to end: the pose comes back, JSON fields, outputs,
# --opt=value, thread counts, exit codes for bad input and failed writes.
. "$(dirname "$0")/lib.sh"

S="$PTREG synth"
expect 0 -- $S --shape aircraft --model "$WORK/model.ply" --model-points 8000 -o "$WORK/scan.ply" --points 3000 \
    --truth "$WORK/truth.txt" --max-angle 10 --noise 0.002 --seed 3
has_file "$WORK/model.ply"; has_file "$WORK/scan.ply"; has_file "$WORK/truth.txt"
out_has "transform taking it onto the model"

expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 200 --truth "$WORK/truth.txt" \
    -o "$WORK/moved.pcd" -t "$WORK/T.txt"
out_has "pose error vs truth"
has_file "$WORK/moved.pcd"; has_file "$WORK/T.txt"
angle=$(sed -n 's/.*rotation \([0-9.e-]*\) deg.*/\1/p' "$WORK/out")
awk -v a="$angle" 'BEGIN { exit !(a < 0.5) }' || fail "rotation error $angle deg is not below 0.5"

expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --json --tol 0 --max-iter 12 --threads 1 \
    --init "$WORK/T.txt" --nn=kdtree
for key in '"transformation"' '"rmse"' '"fitness"' '"iterations":	12' '"converged":	false' \
    '"stop_reason":	"max_iterations"' '"time_ms"' '"build_ms"' '"nn":	"kdtree"' '"threads":	1' '"mse"'; do
    out_has "$key"
done
cp "$WORK/out" "$WORK/one_thread.json"
expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --json --tol 0 --max-iter 12 --threads 2 \
    --init "$WORK/T.txt" --nn brute
# same bits for another thread count and method: compare everything but timings and labels
strip() { grep -vE '"(time_ms|build_ms|threads|nn)"' "$1"; }
diff <(strip "$WORK/one_thread.json") <(strip "$WORK/out") >/dev/null || fail "2 threads / brute force differ from 1 thread / k-d tree"

# bad input: exit 3, the file named, no output written
printf 'ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nend_header\n1\n2\n' >"$WORK/bad.ply"
expect 3 -- "$PTREG" icp "$WORK/bad.ply" "$WORK/model.ply" -o "$WORK/never.ply" -t "$WORK/never.txt"
err_has "bad.ply"; no_file "$WORK/never.ply"; no_file "$WORK/never.txt"
expect 3 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/missing.ply" -o "$WORK/never.ply"
err_has "missing.ply"; no_file "$WORK/never.ply"
printf '1 0 0 0\n0 2 0 0\n0 0 1 0\n0 0 0 1\n' >"$WORK/scale.txt"
expect 3 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --init "$WORK/scale.txt"; err_has "rigid"
printf '1 0 0\n' >"$WORK/short.txt"
expect 3 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --init "$WORK/short.txt"; err_has "short.txt"
# a write that cannot happen: exit 4, nothing left behind
expect 4 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" -o "$WORK/no/such/dir/moved.ply"
[ -z "$(ls "$WORK" | grep -v -E '^(model.ply|scan.ply|truth.txt|moved.pcd|T.txt|out|err|one_thread.json|bad.ply|scale.txt|short.txt)$')" ] ||
    fail "stray files: $(ls "$WORK")"
# a device that is not here: a usage error naming it, never a CPU run
expect 2 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --device cuda:9 -o "$WORK/never.ply"; err_has "cuda:9"
no_file "$WORK/never.ply"

# convert and info round trip
expect 0 -- "$PTREG" convert "$WORK/scan.ply" -o "$WORK/scan.xyz"
expect 0 -- "$PTREG" convert "$WORK/scan.xyz" -o "$WORK/scan2.ply" --transform "$WORK/truth.txt"
expect 0 -- "$PTREG" info "$WORK/scan2.ply" --json; out_has '"points":	3000'
expect 0 -- "$PTREG" info "$WORK/model.ply"; out_has "8000 points with normals"
finish
