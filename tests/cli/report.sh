# --html on the registration commands and `ptreg view`: the page holds the
# layers each command promises, its JSON is the command's --json (the colour
# bar's range the JSON's distances), the cap thins every cloud alike, and a
# page that cannot be written fails the run without leaving any output. The
# pages in a browser: tests/html/.
. "$(dirname "$0")/lib.sh"

# describe PAGE: the page's description, printed as JSON (the report's
# <script id="ptreg-report">); python3 checks in the cases below read it.
describe() {
    python3 -c 'import json, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"<script type=\"application/json\" id=\"ptreg-report\">(.*?)</script>", text, re.S)
print(json.dumps(json.loads(m.group(1))))' "$1"
}
# check PAGE PYTHON-EXPRESSION: d is the description, j the --json output in $WORK/out
check() {
    describe "$1" >"$WORK/desc.json" || { fail "$1: no description"; return; }
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); j = json.load(open(sys.argv[2])) if sys.argv[4] == "json" else None
names = [l["name"] for l in d["layers"]]
sys.exit(0 if eval(sys.argv[3]) else 1)' "$WORK/desc.json" "$WORK/out" "$2" "${3:-}" || fail "$1: not ($2)"
}

expect 0 -- "$PTREG" synth --shape aircraft --model "$WORK/model.ply" --model-points 4000 -o "$WORK/scan.ply" \
    --points 3000 --max-angle 10 --noise 0.002 --truth-out "$WORK/truth.txt" --seed 1

# icp: the page and --json together; the page's result is the JSON printed
expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --html "$WORK/icp.html" --json -t "$WORK/t.txt"
has_file "$WORK/icp.html"
cp "$WORK/out" "$WORK/icp.json"
check "$WORK/icp.html" 'names == ["target", "source before", "source after"] and d["result"] == j' json
check "$WORK/icp.html" 'd["layers"][2]["range"] == [j["distance_to_target"]["min"], j["distance_to_target"]["max"]]' json
check "$WORK/icp.html" 'len(d["curves"]) == 1 and len(d["curves"][0]["values"]) == j["iterations"] + 1' json
check "$WORK/icp.html" 'd["shown"] == {"points": 10000, "of": 10000, "cap": 2000000}' json
# without --json the human lines, and the page still has the numbers
expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --html "$WORK/icp2.html"
out_has "rmse"
check "$WORK/icp2.html" 'd["result"]["command"] == "icp" and d["result"]["distance_to_target"]["max"] > 0'
grep -q '"distance_to_target"' "$WORK/out" && fail "icp: distances printed without --json"

# the cap: 10,000 points at most 1000, every cloud by the same fraction
expect 0 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --html "$WORK/cap.html" --html-max-points 1000
check "$WORK/cap.html" '[l["count"] for l in d["layers"]] == [400, 300, 300] and d["shown"]["points"] == 1000'
expect 2 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --html "$WORK/x.html" --html-max-points 0
no_file "$WORK/x.html"

# a page that cannot be written: told before the run (2), no output at all
expect 2 -- "$PTREG" icp "$WORK/scan.ply" "$WORK/model.ply" --html "$WORK/no/such/folder/r.html" \
    -t "$WORK/t-none.txt"
err_has "r.html"
no_file "$WORK/t-none.txt"

# emicp: the same three clouds
expect 0 -- "$PTREG" emicp "$WORK/scan.ply" "$WORK/model.ply" --max-iter 5 --html "$WORK/emicp.html" --json
check "$WORK/emicp.html" 'names == ["target", "source before", "source after"] and d["result"] == j' json

# register (a blob turned anywhere, as register.sh): the matches kept, as lines;
# RANSAC's inliers at least (the final pose keeps them), never more than the matches
expect 0 -- "$PTREG" synth --shape blob --model "$WORK/blob.ply" --model-points 8000 -o "$WORK/blob-scan.ply" \
    --points 6000 --max-angle 180 --truth-out "$WORK/blob-truth.txt" --noise 0.001 --seed 6
expect 0 -- "$PTREG" register "$WORK/blob-scan.ply" "$WORK/blob.ply" --html "$WORK/register.html" --json
check "$WORK/register.html" 'names[3] == "matches kept" and d["layers"][3]["kind"] == "lines"' json
check "$WORK/register.html" 'j["ransac_inliers"] > 0 and 0 < d["layers"][3]["total"] <= j["matches"]' json

# view: any clouds; --transform moves the first, --distance colours it
expect 0 -- "$PTREG" view "$WORK/scan.ply" "$WORK/model.ply" -o "$WORK/view.html"
check "$WORK/view.html" 'len(names) == 2 and d["layers"][0]["color"] != d["layers"][1]["color"]'
expect 0 -- "$PTREG" view "$WORK/scan.ply" "$WORK/model.ply" --transform "$WORK/t.txt" --distance \
    -o "$WORK/view2.html"
check "$WORK/view2.html" 'names == ["target", "source before", "source after"]'
# the same distances as icp's own (the transform read back exactly)
cp "$WORK/icp.json" "$WORK/out"
check "$WORK/view2.html" 'd["layers"][2]["range"] == [j["distance_to_target"]["min"], j["distance_to_target"]["max"]]' \
    json
expect 2 -- "$PTREG" view "$WORK/scan.ply" --distance -o "$WORK/view3.html"
expect 2 -- "$PTREG" view "$WORK/scan.ply"
expect 3 -- "$PTREG" view "$WORK/missing.ply" -o "$WORK/view4.html"
no_file "$WORK/view3.html"
no_file "$WORK/view4.html"

finish
