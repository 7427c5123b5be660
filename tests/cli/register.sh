# ptreg register: a blob's scan turned anywhere comes back without a guess;
# JSON fields, outputs, the same bits when repeated, bad options.
. "$(dirname "$0")/lib.sh"

expect 0 -- "$PTREG" synth --shape blob --model "$WORK/m.ply" --model-points 8000 -o "$WORK/s.ply" --points 6000 \
    --max-angle 180 --truth-out "$WORK/truth.txt" --noise 0.001 --seed 6
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --truth "$WORK/truth.txt" --json --repeat 2 \
    -o "$WORK/moved.ply" -t "$WORK/T.txt"
for key in '"voxel"' '"matches"' '"ransac_hypotheses"' '"ransac_inliers"' '"features_ms"' '"match_ms"' \
    '"global_ms"' '"refine_ms"' '"fitness"'; do
    out_has "$key"
done
has_file "$WORK/moved.ply"; has_file "$WORK/T.txt"
# bounds: what it reaches (2026-12: 0.0069 deg and 0.00015, RANSAC alone
# 1.7 deg and 0.026; FGR the same as RANSAC after GICP) with a margin of ~10x
checks json "$WORK/out" rotation_error_deg '<' 0.07 --what "register: rotation error (deg)"
checks json "$WORK/out" translation_error '<' 0.0015 --what "register: translation error"
# the stages alone: RANSAC only, a GICP refinement, one-way matches; the same bits with 1 thread
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --no-refine --truth "$WORK/truth.txt"
checks text "$WORK/out" 'pose error vs truth: rotation (\S+) deg' '<' 5 --what "register --no-refine: rotation error (deg)"
checks text "$WORK/out" 'deg, translation (\S+)' '<' 0.1 --what "register --no-refine: translation error"
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --method gicp --one-way -t "$WORK/T2.txt" --threads 2
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --method gicp --one-way -t "$WORK/T1.txt" --threads 1
cmp -s "$WORK/T1.txt" "$WORK/T2.txt" || fail "register: 1 and 2 threads differ"
expect 0 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --global fgr --truth "$WORK/truth.txt" --json
out_has '"fgr_tuples"'
checks json "$WORK/out" rotation_error_deg '<' 0.07 --what "register --global fgr: rotation error (deg)"
checks json "$WORK/out" translation_error '<' 0.0015 --what "register --global fgr: translation error"
expect 2 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --global teaser; err_has "ransac|fgr"
expect 2 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --method bogus; err_has "--method"
expect 2 -- "$PTREG" register "$WORK/s.ply" "$WORK/m.ply" --voxel -1; err_has "--voxel"
expect 3 -- "$PTREG" register "$WORK/s.ply" "$WORK/missing.ply" -o "$WORK/never.ply"; err_has "missing.ply"
no_file "$WORK/never.ply"
expect 0 -- "$PTREG" register --help; out_has "RANSAC"
finish
