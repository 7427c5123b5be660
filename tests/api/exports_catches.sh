#!/bin/bash
# exports.sh's own test: in a copy of the tree where the front ends no
# longer call ptreg_option_table_find (the tests still do; no other module
# of the library calls it), it must name that function as used by the tests
# alone and fail. (ptreg_stop_reason_name, the first choice, is called by
# the result tables since, so it stays called outside its file.)
# usage: exports_catches.sh LIBPTREG.so BUILD_DIR SOURCE_DIR
set -euo pipefail
lib=$1 build=$2 root=$3
victim=ptreg_option_table_find
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs"
cp -r "$root/src" "$root/python" "$root/bench" "$root/tests" "$tmp/"
cp "$root/docs/API.md" "$tmp/docs/"
grep -rlw "$victim" "$tmp/src/cli" "$tmp/python/ptreg" "$tmp/bench" "$tmp/docs" |
    xargs -r sed -i "s/\\b$victim\\b/front_end_renamed/g"
if out=$(bash "$root/tests/api/exports.sh" "$lib" "$build" "$tmp" 2>&1); then
    echo "exports.sh passed a function the tests alone call" >&2
    exit 1
fi
grep -q "^$victim (.*called by the tests alone" <<<"$out" ||
    { echo "exports.sh failed without naming $victim: $out" >&2; exit 1; }
echo "exports.sh names a function the tests alone call"
