# ptreg index --tune: the methods' times and the choice (human and --json),
# stored in the index (ptreg info), used by icp --nn auto ("nn_auto":
# "measured", the same result bits as that method), --no-tune keeps the
# rule; re-tuning a saved .pti; a damaged TUNE section is refused (exit 3).
. "$(dirname "$0")/lib.sh"

expect 0 -- "$PTREG" synth --shape blob --model "$WORK/model.ply" --model-points 3000 -o "$WORK/scan.ply" \
    --points 2000 --truth-out "$WORK/truth.txt" --max-angle 8 --noise 0.002 --seed 5
expect 0 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/plain.pti"
out_has "not measured"
expect 0 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/model.pti" --tune --tune-repeat 2 --tune-sample 1500
out_has "nearest neighbors measured"; out_has "<- chosen"; out_has "kdtree"; out_has "delaunay-pnnopt"
out_has "k-d tree leaf size"
expect 0 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/leaf.pti" --tune --tune-repeat 1 --tune-sample 500 --json
out_has '"leaf_tune"'; out_has '"128"'
# a leaf size given is kept: only the methods are measured
expect 0 -- "$PTREG" index "$WORK/model.ply" -o "$WORK/leaf16.pti" --tune --tune-repeat 1 --tune-sample 500 \
    --leaf-size 16 --json
/usr/bin/python3 -c "import json, sys; d = json.load(open('$WORK/out')); sys.exit('leaf_tune' in d)" ||
    fail "--leaf-size with --tune still measured leaf sizes"
expect 0 -- "$PTREG" index "$WORK/plain.pti" -o "$WORK/retuned.pti" --tune --tune-repeat 1 --json
out_has '"tune"'; out_has '"choice"'; out_has '"median_ms"'; out_has '"same_bits":	true'
choice=$(/usr/bin/python3 -c "import json; print(json.load(open('$WORK/out'))['tune']['choice'])") ||
    fail "no choice in --json"
expect 0 -- "$PTREG" info "$WORK/retuned.pti" --json
out_has "\"nn_measured\":	\"$choice\""

strip() { /usr/bin/python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps([d[k] for k in ("transformation", "rmse", "fitness", "pairs", "iterations", "mse")]))
PY
}
expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/retuned.pti" --json --tol 0 --max-iter 10 --device cpu
out_has "\"nn\":	\"$choice\""; out_has '"nn_auto":	"measured"'
strip "$WORK/out" >"$WORK/auto.res"
expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/retuned.pti" --json --tol 0 --max-iter 10 \
    --device cpu --nn "$choice"
out_has '"nn_auto":	null'
strip "$WORK/out" >"$WORK/explicit.res"
cmp -s "$WORK/auto.res" "$WORK/explicit.res" || fail "auto (measured $choice) differs from --nn $choice"
expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/retuned.pti" --json --tol 0 --max-iter 10 \
    --device cpu --no-tune
out_has '"nn":	"delaunay-pnnopt"'; out_has '"nn_auto":	"rule"'
strip "$WORK/out" >"$WORK/rule.res"
cmp -s "$WORK/auto.res" "$WORK/rule.res" || fail "the rule's method differs"
expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/plain.pti" --json --device cpu
out_has '"nn_auto":	"rule"'
expect 0 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/retuned.pti" --device cpu
out_has "measured fastest"

# a damaged TUNE section (the method set to 99, checksum repaired): exit 3, the file named
/usr/bin/python3 - "$WORK/retuned.pti" "$WORK/badtune.pti" <<'PY' || fail "could not damage the file"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack_from("<I", b, 32)[0]
for i in range(n):
    tag, _, off, _ = struct.unpack_from("<IIQQ", b, 64 + 24 * i)
    if tag == 17:
        struct.pack_into("<I", b, off, 99)
B, P, M = 0xcbf29ce484222325, 0x100000001b3, (1 << 64) - 1
lanes = [B] * 4
for at in range(64, len(b) - len(b) % 32, 32):
    for k in range(4):
        w = struct.unpack_from("<Q", b, at + 8 * k)[0]
        h = ((lanes[k] ^ w) * P) & M
        lanes[k] = h ^ (h >> 32)
h = B
for c in b"".join(struct.pack("<Q", x) for x in lanes):
    h = ((h ^ c) * P) & M
struct.pack_into("<Q", b, 24, h)
open(sys.argv[2], "wb").write(b)
PY
expect 3 -- "$PTREG" icp "$WORK/scan.ply" --target-index "$WORK/badtune.pti"
err_has "badtune.pti"; err_has "TUNE"
# usage: an index without --tune
expect 2 -- "$PTREG" index "$WORK/plain.pti" -o "$WORK/x.pti"
expect 0 -- "$PTREG" index --help; out_has "tune"; out_has "nn_auto"
finish
