# ptreg harris3d end to end: a box phantom's corners come out, in every
# volume format; JSON fields; outputs; thread counts; exit codes for bad
# options and bad input (nothing written).
. "$(dirname "$0")/lib.sh"

# A 40 x 36 x 30 uint8 volume of 10 with a box of 200 over voxels 10..25 x 8..22 x 6..19.
python3 - "$WORK" <<'PY'
import struct, sys, gzip
w = sys.argv[1]
nx, ny, nz = 40, 36, 30
vox = bytearray(b"\x0a" * (nx * ny * nz))
for z in range(6, 20):
    for y in range(8, 23):
        for x in range(10, 26):
            vox[x + nx * (y + ny * z)] = 200
open(f"{w}/box_40x36x30_uint8.raw", "wb").write(vox)
open(f"{w}/headerless.raw", "wb").write(vox)
head = "NRRD0004\ntype: uint8\ndimension: 3\nsizes: 40 36 30\nspacings: 0.5 0.5 2\n"
open(f"{w}/box.nrrd", "wb").write((head + "encoding: raw\n\n").encode() + vox)
open(f"{w}/boxgz.nrrd", "wb").write((head + "encoding: gzip\n\n").encode() + gzip.compress(bytes(vox)))
open(f"{w}/short.nrrd", "wb").write((head + "encoding: raw\n\n").encode() + vox[:-10])
open(f"{w}/badgz.nrrd", "wb").write((head + "encoding: gzip\n\n").encode() + b"\x1f\x8b\x08\x00garbage")
open(f"{w}/badtype.nrrd", "wb").write(b"NRRD0004\ntype: complex\ndimension: 3\nsizes: 2 2 2\nencoding: raw\n\n" + bytes(8))
PY

expect 0 -- "$PTREG" harris3d "$WORK/box_40x36x30_uint8.raw" -o "$WORK/k.csv" --scores "$WORK/s.nrrd"
out_has "8 keypoints"; out_has "40 x 36 x 30 u8"
has_file "$WORK/k.csv"; has_file "$WORK/s.nrrd"
[ "$(wc -l <"$WORK/k.csv")" -eq 9 ] || fail "k.csv should hold a header and 8 keypoints"
head -c 9 "$WORK/s.nrrd" | grep -q NRRD0004 || fail "scores are not NRRD"

# The same corners from NRRD (raw and gzip) and from --dims/--type; physical coordinates use the spacing.
expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --json -o "$WORK/n.csv"
out_has '"keypoints":	8'; out_has '"spacing":	.0.5, 0.5, 2.,'
expect 0 -- "$PTREG" harris3d "$WORK/boxgz.nrrd" --json
out_has '"keypoints":	8'
expect 0 -- "$PTREG" harris3d "$WORK/headerless.raw" --dims 40,36,30 --type uint8 --spacing 0.5,0.5,2 -o "$WORK/h.csv"
diff "$WORK/n.csv" "$WORK/h.csv" >/dev/null || fail "NRRD and raw with --spacing give different keypoints"
cut -d, -f5-7 "$WORK/n.csv" | diff - <(cut -d, -f5-7 "$WORK/k.csv") >/dev/null || fail "voxel indices differ"

expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --json --threads 1 --window 3 --border clamp --top 4 --repeat 2
for key in '"time_ms"' '"times_ms"' '"voxels_per_s"' '"keypoints":	4' '"window":	3' '"border":	"clamp"' \
    '"threads":	1' '"max_score"' '"isa"'; do
    out_has "$key"
done
cp "$WORK/out" "$WORK/one.json"
expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --json --threads 2 --window 3 --border clamp --top 4
# (nan-ok: drops the arrays' lines from a diff; no number is compared)
strip() { grep -vE '"(time_ms|times_ms|scores_ms|keypoints_ms|voxels_per_s|threads)"' "$1" | grep -vE '^\s*[0-9.e+-]+,?$|^\s*\],?$'; }
diff <(strip "$WORK/one.json") <(strip "$WORK/out") >/dev/null || fail "1 and 2 threads differ"
expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --reference --threshold 1 -o "$WORK/r.ply"
out_has "reference"; has_file "$WORK/r.ply"
expect 0 -- "$PTREG" harris3d --help; out_has "1/27"; out_has "NRRD"

# --html: the page holds three slices through the centre and the keypoints at origin + index * spacing,
# coloured by score; the JSON in it is --json's; stdout as without --html; a missing folder fails, nothing written.
if html_viewer; then
    expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --json -o "$WORK/hj.csv"
    cp "$WORK/out" "$WORK/hj.json"
    expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --html "$WORK/h.html" -o "$WORK/hh.csv"
    out_has "8 keypoints"; has_file "$WORK/h.html"
    grep -q '"command"' "$WORK/out" && fail "--html without --json printed the JSON"
    python3 - "$WORK" "$(dirname "$0")" <<'PY' || fail "harris3d --html: the page's layers or numbers are wrong"
import json, sys
sys.path.insert(0, sys.argv[2])
import report_page
w = sys.argv[1]
page = report_page.load(w + "/h.html")
want = json.load(open(w + "/hj.json"))
assert page.result["keypoints"] == want["keypoints"] == 8 and page.result["max_score"] == want["max_score"], page.result
assert [l["kind"] for l in page.layers] == ["slice"] * 3 + ["points"], page.layers
xy, xz, yz = page.layers[:3]
assert (xy["width"], xy["height"], xz["width"], xz["height"], yz["width"], yz["height"]) == (40, 36, 40, 30, 36, 30)
# spacing 0.5, 0.5, 2: xy is at z = 15 voxels = 30, its rectangle from -0.25 over 40 * 0.5 by 36 * 0.5
assert xy["corner"] == [-0.25, -0.25, 30] and xy["across"] == [20, 0, 0] and xy["down"] == [0, 18, 0], xy
assert xy["greyRange"] == [10, 200], xy["greyRange"]
kp = page.layer("keypoints")
assert kp["count"] == 8 and kp["valuesName"] == "Harris score" and kp["range"][1] == want["max_score"], kp
rows = [l.split(",") for l in open(w + "/hh.csv").read().split("\n")[1:] if l]
xyz = page.floats(kp, "positions")
for i, r in enumerate(rows):
    assert [float(v) for v in r[:3]] == xyz[3 * i:3 * i + 3], (r, xyz[3 * i:3 * i + 3])
PY
    # a long volume: its slices sampled down to at most 512 pixels a side, still over the whole length
    head -c $((1030 * 6 * 6)) /dev/zero >"$WORK/long_1030x6x6_uint8.raw"
    expect 0 -- "$PTREG" harris3d "$WORK/long_1030x6x6_uint8.raw" --html "$WORK/long.html"
    python3 - "$WORK/long.html" "$(dirname "$0")" <<'PY' || fail "harris3d --html: a long volume's slices are wrong"
import sys
sys.path.insert(0, sys.argv[2])
import report_page
xy, xz, yz = report_page.load(sys.argv[1]).layers[:3]
assert (xy["width"], xy["height"], xz["width"], yz["width"]) == (344, 6, 344, 6), (xy["width"], xy["height"])
assert xy["across"] == [1030, 0, 0] and xy["corner"] == [-0.5, -0.5, 3] and xy["greyRange"] == [0, 1], xy
PY
    expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --json --html "$WORK/hj.html"
    out_has '"keypoints":	8'; has_file "$WORK/hj.html"
    expect 2 -- "$PTREG" harris3d "$WORK/box.nrrd" --html "$WORK/no/such/dir/h.html" -o "$WORK/hn.csv"
    err_has "no/such/dir"; no_file "$WORK/hn.csv"; no_file "$WORK/no"
fi

# bad options: exit 2
expect 2 -- "$PTREG" harris3d "$WORK/box.nrrd" --window 4; err_has "odd"
expect 2 -- "$PTREG" harris3d "$WORK/box.nrrd" --border wrap; err_has "border"
expect 2 -- "$PTREG" harris3d "$WORK/box.nrrd" --threshold 1 --relative 0.1; err_has "exclude"
expect 2 -- "$PTREG" harris3d "$WORK/headerless.raw"; err_has "dims"
expect 2 -- "$PTREG" harris3d "$WORK/headerless.raw" --dims 40,36 --type u8; err_has "dims"
expect 2 -- "$PTREG" harris3d "$WORK/headerless.raw" --dims 40,36,30 --type u7; err_has "type"
expect 2 -- "$PTREG" harris3d "$WORK/box.nrrd" -o "$WORK/k.xyz"; err_has ".ply, .csv"
no_file "$WORK/k.xyz"

# bad input: exit 3, the file named, nothing written
for f in short badgz badtype; do
    expect 3 -- "$PTREG" harris3d "$WORK/$f.nrrd" -o "$WORK/$f.csv" --scores "$WORK/$f-s.nrrd"
    err_has "$f.nrrd"; no_file "$WORK/$f.csv"; no_file "$WORK/$f-s.nrrd"
done
expect 3 -- "$PTREG" harris3d "$WORK/headerless.raw" --dims 40,36,31 --type u8 -o "$WORK/x.csv"
err_has "headerless.raw"; err_has "need"; no_file "$WORK/x.csv"
expect 3 -- "$PTREG" harris3d "$WORK/nonexistent.nrrd"; err_has "nonexistent.nrrd"

# On a device (POCL here): the CPU's keypoints, every method; the device in the JSON; --reference refused.
if has_opencl; then
    expect 0 -- "$PTREG" harris3d "$WORK/box.nrrd" --json --window 3 --border clamp --top 4 --device cpu -o "$WORK/hc.csv"
    out_has '"device":	"cpu"'
    for m in direct tile separable zchunk; do
        expect 0 -- env PTREG_HARRIS_METHOD=$m "$PTREG" harris3d "$WORK/box.nrrd" --json --window 3 --border clamp \
            --top 4 --device opencl:0 -o "$WORK/hg.csv"
        out_has '"device":	"opencl:0"'; out_has '"keypoints":	4'
        diff "$WORK/hc.csv" "$WORK/hg.csv" >/dev/null || fail "$m: opencl:0 and the CPU give different keypoints"
    done
    expect 0 -- "$PTREG" harris3d "$WORK/box_40x36x30_uint8.raw" --device opencl:0; out_has "8 keypoints"
    expect 2 -- env PTREG_HARRIS_METHOD=best "$PTREG" harris3d "$WORK/box.nrrd" --device opencl:0
    err_has "PTREG_HARRIS_METHOD"
    expect 2 -- "$PTREG" harris3d "$WORK/box.nrrd" --device opencl:0 --reference; err_has "CPU only"
fi

# The real tooth volume (skipped without ../shared/data).
if has_data; then
    expect 0 -- "$PTREG" harris3d "$DATA/volumes/tooth_103x94x161_uint8.raw" --json --relative 1e-4 --window 3
    out_has '"keypoints":	5448'
fi
finish
