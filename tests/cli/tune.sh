# ptreg tune: the pair engine's search, its CSV, plot and cache, and emicp
# using the cached winner (or not: --no-tune, engine options, a corrupted,
# stale or foreign cache, each with the defaults).
. "$(dirname "$0")/lib.sh"

export PTREG_TUNE_CACHE="$WORK/cache/tune.json"
expect 0 -- "$PTREG" tune --size 300 --search halving --sample 0.05 --reps 1 --csv "$WORK/t.csv" \
    --plot "$WORK/t.svg" --json
out_has '"winner"'; out_has '"kernel":	"pair"'; out_has '"search":	"halving"'; out_has '"valid_points"'
has_file "$WORK/t.csv"; has_file "$WORK/t.svg"; has_file "$PTREG_TUNE_CACHE"
head -1 "$WORK/t.csv" | grep -q "^threads,col_tile,row_block,row_vectors,tiles_outside,seconds,rate" ||
    fail "the CSV's header"
# (nan-ok: flags counted, and a count compared exactly)
[ "$(awk -F, 'NR > 1 && $NF == 1' "$WORK/t.csv" | wc -l)" = 1 ] || fail "one default row in the CSV"
[ "$(awk -F, 'NR > 1 && $(NF - 1) == 1' "$WORK/t.csv" | wc -l)" = 1 ] || fail "one winner row in the CSV" # nan-ok
grep -q "<svg" "$WORK/t.svg" || fail "the plot is not SVG"
# A run that fails after writing (its JSON into a full stdout) removes what it
# wrote, but never the cache, which holds other runs' winners.
"$PTREG" tune --size 300 --search halving --sample 0.05 --reps 1 --csv "$WORK/t2.csv" --json >/dev/full \
    2>"$WORK/err"
[ $? -eq 4 ] || fail "tune into a full stdout: exit 4"
err_has "cannot write the JSON result"; no_file "$WORK/t2.csv"; has_file "$PTREG_TUNE_CACHE"

"$PTREG" synth --shape blob --model "$WORK/m.ply" --model-points 300 -o "$WORK/s.ply" --points 300 \
    --max-angle 8 --seed 4 >/dev/null || fail "synth"
emicp() { "$PTREG" emicp "$WORK/s.ply" "$WORK/m.ply" --max-iter 15 "$@"; }
expect 0 -- emicp --json; out_has '"source":	"tuned"'
expect 0 -- emicp --json --no-tune -t "$WORK/T_default.txt"; out_has '"source":	"default"'
expect 0 -- emicp --json --tile 128; out_has '"source":	"options"'
expect 0 -- emicp -t "$WORK/T_tuned.txt"; out_has "engine: tuned"
# a tuned run is the default run up to rounding (only the column tile moves sums)
checks tables "$WORK/T_default.txt" "$WORK/T_tuned.txt" 1e-6 --cols 4 --what "the tuned run against the default's"

# unusable caches: the defaults, a warning, never a failure
printf '{"format": 1, "machines": {' >"$PTREG_TUNE_CACHE"
expect 0 -- emicp --json; out_has '"source":	"default"'; err_has "corrupted"
printf '{"format": 99, "machines": {}}' >"$PTREG_TUNE_CACHE"
expect 0 -- emicp --json; out_has '"source":	"default"'; err_has "stale"
printf '{"format": 1, "machines": {"cpu: another machine": {"pair": {"1e5": {"params": {"col_tile": 64}, "ptreg": "0.1.0"}}}}}' \
    >"$PTREG_TUNE_CACHE"
expect 0 -- emicp --json; out_has '"source":	"default"'
# tuning here adds this machine beside the other one
expect 0 -- "$PTREG" tune --size 200 --search coordinate --sample 0.03 --reps 1 --json; out_has '"search":	"coordinate"'
expect 0 -- emicp --json; out_has '"source":	"tuned"'
grep -q "another machine" "$PTREG_TUNE_CACHE" || fail "the other machine's entry was lost"
# a winner outside the space (a hand-edited or hostile cache) is never applied
cp "$PTREG_TUNE_CACHE" "$WORK/good_cache.json"
for bad in '"col_tile": 1e300' '"threads": -3' '"row_vectors": 3' '"col_tile": "x"'; do
    /usr/bin/python3 - "$PTREG_TUNE_CACHE" "$bad" <<'PY'
import json, sys
path, bad = sys.argv[1], json.loads("{" + sys.argv[2] + "}")
c = json.load(open(path))
for machine, kernels in c["machines"].items():
    if machine != "cpu: another machine":
        for entry in kernels.get("pair", {}).values():
            entry["params"].update(bad)
json.dump(c, open(path, "w"))
PY
    expect 0 -- emicp --json
    if [ "$bad" = '"col_tile": "x"' ]; then
        out_has '"source":	"tuned"' # a missing or non-number value keeps its default
    else
        out_has '"source":	"default"'; err_has "outside the kernel's space"
    fi
    cp "$WORK/good_cache.json" "$PTREG_TUNE_CACHE"
done

# Harris's tiling and FPFH's threads: tuned, then used (the same answers)
expect 0 -- "$PTREG" tune --kernel harris --size 32 --search exhaustive --reps 1 --json; out_has '"tile_rows"'
head -c $((32 * 32 * 16)) /dev/urandom >"$WORK/v_32x32x16_uint8.raw"
expect 0 -- "$PTREG" harris3d "$WORK/v_32x32x16_uint8.raw" --json --threshold 0 -o "$WORK/k_tuned.csv"
out_has '"source":	"tuned"'
expect 0 -- "$PTREG" harris3d "$WORK/v_32x32x16_uint8.raw" --json --no-tune --threshold 0 -o "$WORK/k_def.csv"
out_has '"source":	"default"'
cmp -s "$WORK/k_tuned.csv" "$WORK/k_def.csv" || fail "harris3d: the tuned tiling changed the keypoints"
expect 0 -- "$PTREG" tune --kernel fpfh --size 500 --search exhaustive --reps 1
expect 0 -- "$PTREG" fpfh "$WORK/m.ply" --k 20 --json -o "$WORK/f_tuned.csv"; out_has '"source":	"tuned"'
expect 0 -- "$PTREG" fpfh "$WORK/m.ply" --k 20 --no-tune -o "$WORK/f_def.csv"
cmp -s "$WORK/f_tuned.csv" "$WORK/f_def.csv" || fail "fpfh: the tuned threads changed the descriptors"

# the E-step's device kernels, where there is a device (in CI: POCL)
if has_opencl; then
    expect 0 -- "$PTREG" tune --device opencl:0 --size 300 --search coordinate --sample 0.3 --reps 1 --json
    out_has '"kernel":	"pair-device"'; out_has '"wg"'
    expect 0 -- emicp --device opencl:0 --json; out_has '"source":	"tuned"'; out_has '"native_exp"'
    expect 0 -- emicp --device opencl:0 --json --no-tune; out_has '"source":	"default"'
    expect 0 -- "$PTREG" tune --kernel fpfh --device opencl:0 --size 500 --reps 1 --json; out_has '"search_wg"'
    expect 0 -- "$PTREG" fpfh "$WORK/m.ply" --k 20 --device opencl:0 --json -o "$WORK/f_dev_tuned.csv"
    out_has '"source":	"tuned"'
    expect 0 -- "$PTREG" fpfh "$WORK/m.ply" --k 20 --device opencl:0 --no-tune -o "$WORK/f_dev_def.csv"
    cmp -s "$WORK/f_dev_tuned.csv" "$WORK/f_dev_def.csv" || fail "fpfh on opencl:0: the work-groups moved bits"
    expect 0 -- "$PTREG" tune --kernel lddmm --device opencl:0 --size 300 --search coordinate --sample 0.3 \
        --reps 1 --json
    out_has '"kernel":	"lddmm-device"'; out_has '"groups_per_unit"'
    lddmm() { "$PTREG" lddmm "$WORK/m.ply" "$WORK/s.ply" --steps 5 --max-iter 3 --device opencl:0 --json "$@"; }
    expect 0 -- lddmm; out_has '"source":	"tuned"'
    cp "$WORK/out" "$WORK/lddmm_tuned.json"
    expect 0 -- lddmm --no-tune; out_has '"source":	"default"'
    python3 - "$WORK/lddmm_tuned.json" "$WORK/out" <<'PY' || fail "lddmm on opencl:0: the tuned objective is not the default's"
import json, sys
from ptreg_checks import field, finite, near
tuned, plain = (finite(field(json.load(open(f)), "objective"), f + ": objective") for f in sys.argv[1:3])
near(tuned, plain, 1e-5 * abs(plain), "the tuned objective")
PY
    expect 0 -- "$PTREG" tune --kernel harris --device opencl:0 --size 32 --reps 1 --json; out_has '"method"'
    expect 0 -- "$PTREG" harris3d "$WORK/v_32x32x16_uint8.raw" --device opencl:0 --threshold 0 --json \
        -o "$WORK/k_dev.csv"
    out_has '"source":	"tuned"'
    cmp -s "$WORK/k_dev.csv" "$WORK/k_def.csv" || fail "harris3d on opencl:0: not the CPU's keypoints"
fi

PTREG_TUNE_CACHE=off expect 0 -- "$PTREG" tune --size 100 --search halving --sample 0.03 --reps 1
err_has "not kept"
expect 2 -- "$PTREG" tune --kernel pfh; err_has "pair, harris, fpfh or lddmm"
expect 2 -- "$PTREG" tune --kernel lddmm; err_has "give --device"
expect 2 -- "$PTREG" tune --kernel harris --precision fp16; err_has "for pair, fp16"
expect 2 -- "$PTREG" tune --precision fp64
expect 2 -- "$PTREG" tune --search greedy
expect 0 -- "$PTREG" tune --help; out_has "coordinate descent"; out_has "halving"
finish
