# ptreg batch under mpirun: 2 and 3 ranks give one process's bits (atoms in
# .npy and binary .ply, the assignment, motif estimation, pairs), the halo
# widens where the first guess is too thin, and text outputs are refused.
# Skips when ptreg is built without MPI or mpirun is missing.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
"$PTREG" --version | grep -q "mpi: yes" || { echo "skip: ptreg is built without MPI"; exit 77; }
command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }
$PY -c "import numpy" 2>/dev/null || { echo "skip: numpy is not installed for $PY"; exit 77; }
$PY "$(dirname "$0")/batch_data.py" "$WORK" || { fail "batch_data.py"; finish; }
# root in CI containers; more ranks than cores on small machines
MPIRUN=(mpirun --oversubscribe --allow-run-as-root)

# same_bits NAME RANKS -- ptreg batch arguments (with @OUT@ for each output's stem)
same_bits() {
    local name=$1 ranks=$2 f
    shift 3
    expect 0 -- "$PTREG" batch "${@//@OUT@/$WORK/$name.1}"
    expect 0 -- "${MPIRUN[@]}" -n "$ranks" "$PTREG" batch "${@//@OUT@/$WORK/$name.$ranks}" --json
    out_has "\"ranks\":	$ranks"
    for f in "$WORK/$name.1".*; do
        cmp -s "$f" "${f/$name.1/$name.$ranks}" || fail "$name: ${f##*/} differs on $ranks ranks"
    done
}

same_bits crystal 2 -- "$WORK/crystal.pos" -o @OUT@.npy --assignment @OUT@.a.npy --threads 1
same_bits ions 3 -- "$WORK/crystal.pos" -o @OUT@.ply --ranges "$WORK/ranges.rrng" --ion Al --estimate-motif 2
same_bits radius 2 -- "$WORK/crystal.pos" -o @OUT@.npy --radius 0.35 --k 14
same_bits grains 2 -- "$WORK/crystal.pos" -o @OUT@.npy --grain-radius 0.6 --motif-points 18 --estimate-motif 1
same_bits sparse 2 -- "$WORK/sparse_middle.xyz" -o @OUT@.npy --estimate-motif 1
rounds=$(sed -n 's/.*"halo_rounds":\t\([0-9]*\).*/\1/p' "$WORK/out")
[ "${rounds:-0}" -gt 1 ] || fail "the sparse middle took ${rounds:-no} halo rounds: it should need more than one"
same_bits pairs 2 -- --pairs "$WORK/ragged.ptpairs" -o @OUT@.npy
same_bits shared 3 -- --pairs "$WORK/shared.ptpairs" -o @OUT@.npy --rotation-only

expect 2 -- "${MPIRUN[@]}" -n 2 "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.csv"; err_has "under MPI"
expect 2 -- "${MPIRUN[@]}" -n 2 "$PTREG" batch --pairs "$WORK/ragged.ptpairs" -o "$WORK/never.csv"
no_file "$WORK/never.csv"
expect 3 -- "${MPIRUN[@]}" -n 2 "$PTREG" batch "$WORK/bad.pos" -o "$WORK/never.npy"; no_file "$WORK/never.npy"
# --html draws one process's atoms: refused under mpirun, before any work
expect 2 -- "${MPIRUN[@]}" -n 2 "$PTREG" batch "$WORK/crystal.pos" -o "$WORK/never.npy" --html "$WORK/never.html"
err_has "without mpirun"; no_file "$WORK/never.npy"; no_file "$WORK/never.html"
finish
