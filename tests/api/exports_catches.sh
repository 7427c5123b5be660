#!/bin/bash
# exports.sh's own test: in a copy of the tree where the front ends no
# longer call ptreg_stop_reason_name (the tests still do), it must name that
# function as used by the tests alone and fail.
# usage: exports_catches.sh LIBPTREG.so BUILD_DIR SOURCE_DIR
set -euo pipefail
lib=$1 build=$2 root=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/docs"
cp -r "$root/src" "$root/python" "$root/bench" "$root/tests" "$tmp/"
cp "$root/docs/API.md" "$tmp/docs/"
grep -rlw ptreg_stop_reason_name "$tmp/src/cli" "$tmp/python/ptreg" "$tmp/bench" "$tmp/docs" |
    xargs -r sed -i 's/\bptreg_stop_reason_name\b/front_end_renamed/g'
if out=$(bash "$root/tests/api/exports.sh" "$lib" "$build" "$tmp" 2>&1); then
    echo "exports.sh passed a function the tests alone call" >&2
    exit 1
fi
grep -q '^ptreg_stop_reason_name (.*called by the tests alone' <<<"$out" ||
    { echo "exports.sh failed without naming ptreg_stop_reason_name: $out" >&2; exit 1; }
echo "exports.sh names a function the tests alone call"
