# ptreg emicp end to end: the pose comes back, JSON fields, outputs, thread
# counts and precisions, exit codes for bad options and bad input.
. "$(dirname "$0")/lib.sh"

expect 0 -- "$PTREG" synth --shape aircraft --model "$WORK/model.ply" --model-points 3000 -o "$WORK/scan.ply" \
    --points 1500 --truth-out "$WORK/truth.txt" --max-angle 25 --noise 0.002 --seed 4
expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --truth "$WORK/truth.txt" -o "$WORK/moved.ply" \
    -t "$WORK/T.txt"
out_has "pose error vs truth"; out_has "Gpts/s"
has_file "$WORK/moved.ply"; has_file "$WORK/T.txt"
# EM-ICP's noisy scan, 25 degrees away, ends 0.30 deg and 0.029 off (2026-12): the bounds it always had
checks text "$WORK/out" 'rotation (\S+) deg' '<' 0.5 --what "emicp: rotation error (deg)"
checks text "$WORK/out" 'translation (\S+)' '<' 0.1 --what "emicp: translation error"

expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --json --threads 1 --max-iter 20
for key in '"transformation"' '"rmse"' '"fitness"' '"pairs"' '"iterations":	20' '"converged":	false' \
    '"stop_reason":	"max_iterations"' '"time_ms"' '"gpts"' '"sigma2_final"' '"precision":	"fp32"' '"threads":	1'; do
    out_has "$key"
done
cp "$WORK/out" "$WORK/one_thread.json"
expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --json --threads 2 --max-iter 20 --row-vectors 4 \
    --loop tiles-outside --row-block 64
strip() { sed '/"variant":/,/}/d' "$1" | grep -vE '"(time_ms|pair_ms|gpts|threads)"'; } # the engine's knobs differ on purpose
diff <(strip "$WORK/one_thread.json") <(strip "$WORK/out") >/dev/null ||
    fail "2 threads / another row blocking differ from 1 thread"

expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --json --precision fp16 --max-iter 3 --repeat 2
out_has '"precision":	"fp16"'; out_has '"times_ms"'
expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --json --precision fp64 --max-iter 2 --preset tamaki
out_has '"precision":	"fp64"'; out_has '"sigma2_init":	0.01'

# bad options: exit 2
expect 2 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --precision fp8; err_has "fp8"
expect 2 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --preset fast; err_has "preset"
expect 2 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --sigma-factor 1.5; err_has "sigma-factor"
expect 2 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --row-vectors 3; err_has "row-vectors"
expect 2 -- "$PTREG" emicp "$WORK/scan.ply"
expect 0 -- "$PTREG" emicp --help; out_has "tamaki"; out_has "uniform weights"

# bad input: exit 3, the file named, nothing written
printf 'ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nend_header\n1\n2\n' >"$WORK/bad.ply"
expect 3 -- "$PTREG" emicp "$WORK/bad.ply" "$WORK/model.ply" -o "$WORK/never.ply" -t "$WORK/never.txt"
err_has "bad.ply"; no_file "$WORK/never.ply"; no_file "$WORK/never.txt"
printf '1 1 1\n1 1 1\n1 1 1\n' >"$WORK/point.xyz"
expect 3 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/point.xyz" -o "$WORK/never.ply"
err_has "point.xyz: all 3 points are the same point"; no_file "$WORK/never.ply"
finish
