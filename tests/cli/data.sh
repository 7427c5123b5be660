# The CLI on the real files in ../shared/data (skipped without them).
. "$(dirname "$0")/lib.sh"
[ -n "$DATA" ] && [ -f "$DATA/README.md" ] || { echo "shared data absent: skipped"; exit 77; }

expect 0 -- "$PTREG" info "$DATA/pcl/milk.pcd" --json; out_has '"points"'
expect 0 -- "$PTREG" info "$DATA/bunny/bun000.ply"; out_has "40256 points"
expect 0 -- "$PTREG" info "$DATA/lidar/source.ply"; out_has "points"
expect 0 -- "$PTREG" info "$DATA/landmarks/shooting_test_3d_sphere.vtk"; out_has "162 points"
# PCL's regression through the CLI (values in ../shared/data/README.md)
expect 0 -- "$PTREG" icp "$DATA/pcl/bun0.pcd" "$DATA/pcl/bun4.pcd" --max-iter 50 --max-dist 0.05 --tol 0 \
    -t "$WORK/T.txt"
read -r a b c d <"$WORK/T.txt"
awk -v a="$a" -v c="$c" -v d="$d" 'BEGIN { exit !(a > 0.8796 && a < 0.8816 && c > -0.4734 && c < -0.4714 && d > 0.0335 && d < 0.0355) }' ||
    fail "bun0 -> bun4 first row: $a $b $c $d"
finish
