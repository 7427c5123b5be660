# ptreg filter, evaluate and correspond (issue 47, item 8): Open3D's answers
# for the same input (tests/data/tools, made by make_golden.py there), the
# same bits for any thread count, attributes kept, bad options and files.
. "$(dirname "$0")/lib.sh"
G=$TESTS_DIR/data/tools

# same_indices FILE GOLDEN WHAT: the kept indices (integers) exactly Open3D's
same_indices() {
    grep -v '^#' "$1" | cmp -s - "$2" || fail "$3: not Open3D's indices ($(grep -vc '^#' "$1") lines, $(wc -l <"$2") wanted)"
}

# ---- filter: Open3D's kept points ----
expect 0 -- "$PTREG" filter "$G/source.xyz" --statistical 2 --k 20 -o "$WORK/s.ply" --indices "$WORK/s.txt" --json
same_indices "$WORK/s.txt" "$G/statistical_20_2.txt" "filter --statistical 2 --k 20"
checks json "$WORK/out" kept '==' 605 --what "filter --statistical: kept"
checks json "$WORK/out" removed '==' 25 --what "filter --statistical: removed"
expect 0 -- "$PTREG" filter "$G/source.xyz" --statistical 0.5 --k 6 -o "$WORK/s6.xyz" --indices "$WORK/s6.txt"
same_indices "$WORK/s6.txt" "$G/statistical_6_0.5.txt" "filter --statistical 0.5 --k 6"
expect 0 -- "$PTREG" filter "$G/source.xyz" --radius 0.08 --min-neighbors 8 -o "$WORK/r.pcd" --indices "$WORK/r.txt"
same_indices "$WORK/r.txt" "$G/radius_0.08_8.txt" "filter --radius 0.08 --min-neighbors 8"
expect 0 -- "$PTREG" info "$WORK/r.pcd" --json
checks json "$WORK/out" points '==' 262 --what "filter --radius: the output's points"
expect 0 -- "$PTREG" filter "$G/source.xyz" --uniform 7 -o "$WORK/u.xyz" --indices "$WORK/u.txt"
same_indices "$WORK/u.txt" "$G/uniform_7.txt" "filter --uniform 7"
# the points written are the input's, in its order
expect 0 -- "$PTREG" filter "$G/source.xyz" --uniform 1 -o "$WORK/all.xyz"
checks tables "$WORK/all.xyz" "$G/source.xyz" 0 --what "filter --uniform 1: the input itself"

# ---- filter: random draws, seeded; threads; attributes ----
expect 0 -- "$PTREG" filter "$G/source.xyz" --random 0.1 --seed 5 -o "$WORK/a.xyz" --indices "$WORK/a.txt" --json
checks json "$WORK/out" kept '==' 63 --what "filter --random 0.1 of 630: Open3D's floor"
expect 0 -- "$PTREG" filter "$G/source.xyz" --random 0.1 --seed 5 -o "$WORK/b.xyz" --threads 1
cmp -s "$WORK/a.xyz" "$WORK/b.xyz" || fail "filter --random: another run, another draw"
expect 0 -- "$PTREG" filter "$G/source.xyz" --random 0.1 --seed 6 -o "$WORK/c.xyz"
cmp -s "$WORK/a.xyz" "$WORK/c.xyz" && fail "filter --random: --seed 6 draws what --seed 5 did"
sort -n -c "$WORK/a.txt" 2>/dev/null || fail "filter --random: the kept points out of the cloud's order"
expect 0 -- "$PTREG" filter "$G/source.xyz" --random-count 100 -o "$WORK/d.xyz" --json
checks json "$WORK/out" kept '==' 100 --what "filter --random-count 100"
for f in "--statistical 1 --k 12" "--radius 0.06 --min-neighbors 3"; do
    # shellcheck disable=SC2086
    expect 0 -- "$PTREG" filter "$G/source.xyz" $f -o "$WORK/t1.ply" --threads 1
    # shellcheck disable=SC2086
    expect 0 -- "$PTREG" filter "$G/source.xyz" $f -o "$WORK/t2.ply" --threads 2
    cmp -s "$WORK/t1.ply" "$WORK/t2.ply" || fail "filter $f: 1 and 2 threads differ"
done
expect 0 -- "$PTREG" synth --shape blob --model "$WORK/m.ply" --model-points 3000 -o "$WORK/scan.ply" --points 2000 \
    --outliers 0.05 --seed 3
expect 0 -- "$PTREG" filter "$WORK/m.ply" --statistical 2 -o "$WORK/mn.ply"
expect 0 -- "$PTREG" info "$WORK/mn.ply" --json
out_has '"normals":	true'
expect 0 -- "$PTREG" filter "$WORK/scan.ply" --statistical 1 -o "$WORK/clean.ply" --json
checks json "$WORK/out" removed '>=' 50 --what "filter --statistical on 5% outliers: removed"

# ---- evaluate: Open3D's evaluate_registration ----
expect 0 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz" --transform "$G/near.txt" --max-dist 0.02 --json \
    --correspondences "$WORK/pairs.txt"
read -r fitness rmse count <"$G/evaluate_near_0.02.txt"
checks json "$WORK/out" correspondences '==' "$count" --what "evaluate: pairs"
# Open3D's numbers to rounding (reached 1e-17 and 0)
checks json "$WORK/out" fitness near "$fitness" --tol 1e-15 --what "evaluate: fitness"
checks json "$WORK/out" inlier_rmse near "$rmse" --tol 1e-14 --what "evaluate: inlier_rmse"
checks tables "$WORK/pairs.txt" "$G/evaluate_near_0.02_pairs.txt" 0 --what "evaluate --correspondences"
expect 0 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz" --max-dist 0.02 --threads 1
out_has "fitness"
expect 0 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz" --max-dist 1e9 --json
checks json "$WORK/out" fitness '==' 1 --what "evaluate --max-dist 1e9: every point paired"

# ---- correspond: Horn on given pairs, RANSAC, weights ----
expect 0 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$G/pairs_clean.txt" -t "$WORK/T.txt" --json
checks tables "$WORK/T.txt" "$G/horn_clean.txt" 1e-12 --what "correspond: Open3D's point-to-point estimate"
checks json "$WORK/out" pairs '==' 450 --what "correspond: pairs used"
expect 0 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$G/pairs.txt" --truth "$G/truth.txt" --json
checks json "$WORK/out" rotation_error_deg '>' 0.5 --what "correspond without RANSAC: 50 wrong pairs pull it off (0.92 deg)"
expect 0 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$G/pairs.txt" --truth "$G/truth.txt" \
    --ransac-dist 0.01 --json -t "$WORK/R2.txt" -o "$WORK/moved.ply"
# what it reaches (0.0216 deg, 0.00026: the target's noise) with a margin
checks json "$WORK/out" rotation_error_deg '<' 0.1 --what "correspond --ransac-dist: rotation error (deg)"
checks json "$WORK/out" translation_error '<' 0.002 --what "correspond --ransac-dist: translation error"
checks json "$WORK/out" ransac_inliers '==' 450 --what "correspond --ransac-dist: inliers"
checks tables "$WORK/R2.txt" "$G/horn_clean.txt" 1e-12 --what "correspond --ransac-dist: the fit on its inliers"
has_file "$WORK/moved.ply"
expect 0 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$G/pairs.txt" --ransac-dist 0.01 \
    -t "$WORK/R1.txt" --threads 1
cmp -s "$WORK/R1.txt" "$WORK/R2.txt" || fail "correspond --ransac-dist: 1 and 2 threads differ"
# weights: the wrong pairs weigh 0, the fit is the clean pairs'
python3 -c "
import sys
rows = [l.split() for l in open(sys.argv[1])]
with open(sys.argv[2], 'w') as f:
    for s, t in rows:
        f.write('%s %s %s\n' % (s, t, '1' if s == t else '0'))
" "$G/pairs.txt" "$WORK/weighted.txt"
expect 0 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/weighted.txt" -t "$WORK/W.txt"
out_has "(weighted)"
checks tables "$WORK/W.txt" "$G/horn_clean.txt" 1e-12 --what "correspond with weights 0 on the wrong pairs"

# ---- far from zero (UTM): the same pairs, kept points and pose as near zero ----
python3 -c "
import sys
shift = (500000.0, 4500000.0, 100.0)
def moved(name, out):
    with open(out, 'w') as f:
        for line in open(name):
            f.write(' '.join(repr(float(v) + s) for v, s in zip(line.split(), shift)) + '\\n')
moved(sys.argv[1] + '/source.xyz', sys.argv[2] + '/far_s.xyz')
moved(sys.argv[1] + '/target.xyz', sys.argv[2] + '/far_t.xyz')
T = [[float(v) for v in line.split()] for line in open(sys.argv[1] + '/near.txt')]
for r in range(3):  # the pose about the shifted frame: t + s - R s
    T[r][3] += shift[r] - sum(T[r][c] * shift[c] for c in range(3))
with open(sys.argv[2] + '/far_T.txt', 'w') as f:
    f.writelines(' '.join(repr(v) for v in row) + '\\n' for row in T)
" "$G" "$WORK"
expect 0 -- "$PTREG" evaluate "$WORK/far_s.xyz" "$WORK/far_t.xyz" --transform "$WORK/far_T.txt" --max-dist 0.02 \
    --correspondences "$WORK/far_pairs.txt" --json
checks tables "$WORK/far_pairs.txt" "$G/evaluate_near_0.02_pairs.txt" 0 --what "evaluate far from zero: the pairs"
# float32 offsets from the far origin: reached 1e-7
checks json "$WORK/out" inlier_rmse near "$rmse" --tol 1e-6 --what "evaluate far from zero: inlier_rmse"
expect 0 -- "$PTREG" filter "$WORK/far_s.xyz" --statistical 2 -o "$WORK/far_f.xyz" --indices "$WORK/far_i.txt"
same_indices "$WORK/far_i.txt" "$G/statistical_20_2.txt" "filter --statistical far from zero"
expect 0 -- "$PTREG" correspond "$WORK/far_s.xyz" "$WORK/far_t.xyz" --pairs "$G/pairs_clean.txt" --truth "$WORK/far_T.txt" \
    --json
# the near pose is 0.02 deg from the truth; far, the same to float32 offsets (reached 0.0216)
checks json "$WORK/out" rotation_error_deg '<' 0.03 --what "correspond far from zero: rotation error (deg)"

# ---- the caller's mistakes: exit 2, bad files: exit 3, nothing written ----
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply"; err_has "give one filter"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --uniform 2 --random 0.5; err_has "give one filter"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --radius 0.1 --k 5; err_has "\-\-k"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --random 1.5; err_has "\-\-random"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --random-count 631; err_has "631"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --uniform 0; err_has "\-\-uniform"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --statistical 0; err_has "\-\-statistical"
expect 2 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --radius 0.1 --min-neighbors 0; err_has "\-\-min-neighbors"
expect 2 -- "$PTREG" filter "$G/source.xyz" --uniform 2; err_has "\-o OUTPUT"
no_file "$WORK/x.ply"
# nothing kept: an empty cloud no reader takes is not written
expect 4 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --random-count 0; err_has "kept none"
expect 4 -- "$PTREG" filter "$G/source.xyz" -o "$WORK/x.ply" --statistical 1 --k 1 --indices "$WORK/x.txt"
no_file "$WORK/x.ply"; no_file "$WORK/x.txt"
expect 2 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz"; err_has "\-\-max-dist"
expect 2 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz" --max-dist 0; err_has "\-\-max-dist"
expect 2 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz"; err_has "\-\-pairs"
expect 2 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$G/pairs.txt" --seed 3; err_has "\-\-ransac-dist"
# a transform file or a cloud that is not there: exit 3, naming it
expect 3 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz" --max-dist 0.02 --transform "$WORK/no_T.txt"
err_has "no_T.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$G/pairs.txt" --truth "$WORK/no_T.txt"
err_has "no_T.txt"
expect 3 -- "$PTREG" evaluate "$G/source.xyz" "$WORK/no_cloud.xyz" --max-dist 0.02; err_has "no_cloud.xyz"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$WORK/no_cloud.xyz" --pairs "$G/pairs.txt" -t "$WORK/x.txt"
err_has "no_cloud.xyz"
printf '0 1\n2 3\n5 999\n' >"$WORK/far.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/far.txt" -t "$WORK/x.txt"
err_has "far.txt"; err_has "line 3"; err_has "999"
printf '0 1\n2 3 0.5\n' >"$WORK/cols.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/cols.txt"; err_has "line 2"
printf '0 1\n2 x\n' >"$WORK/word.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/word.txt"; err_has "'x'"
printf '0 0 1\n1 1 -2\n2 2 1\n' >"$WORK/neg.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/neg.txt"; err_has "weight"
printf '# nothing\n' >"$WORK/none.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/none.txt"; err_has "no correspondences"
printf '0 0\n1 1\n' >"$WORK/two.txt"
expect 3 -- "$PTREG" correspond "$G/source.xyz" "$G/target.xyz" --pairs "$WORK/two.txt"; err_has "at least 3"
no_file "$WORK/x.txt"
# the CPU only: auto and cpu run, a GPU named is a usage error
expect 0 -- "$PTREG" filter "$G/source.xyz" --uniform 3 -o "$WORK/dev.xyz" --device cpu
expect 0 -- "$PTREG" evaluate "$G/source.xyz" "$G/target.xyz" --max-dist 0.02 --device auto
for cmd in "filter $G/source.xyz --uniform 3 -o $WORK/gpu.xyz" "evaluate $G/source.xyz $G/target.xyz --max-dist 0.02" \
    "correspond $G/source.xyz $G/target.xyz --pairs $G/pairs.txt"; do
    # shellcheck disable=SC2086
    expect 2 -- "$PTREG" $cmd --device opencl:0; err_has "CPU only"
done
no_file "$WORK/gpu.xyz"
finish
