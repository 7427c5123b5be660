#!/bin/bash
# The layers of docs/DESIGN.md, held by the build: every quoted #include in
# src/, include/ptreg/ and the Python extension must name a folder its own
# folder may use. A new include across layers fails here, with the file and
# line; change the table only together with docs/DESIGN.md.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

# folder: the folders whose headers it may include (itself always).
declare -A may=(
    [core]="ptreg"
    [io]="ptreg core"
    [device]="ptreg core"
    [nn]="ptreg core device"
    [pair]="ptreg core device"
    [feat]="ptreg core device nn pair"
    [reg]="ptreg core device nn pair feat"
    [apt]="ptreg core nn reg"
    [tune]="ptreg core device nn pair feat reg"
    [api]="ptreg core device nn pair feat reg apt tune"
    [report]="ptreg"
    [cli]="ptreg"
)

bad=0
report() { echo "$1: includes \"$2\": $3" >&2; bad=1; }

check_folder() { # folder, allowed folders, files...
    local folder=$1 allowed=" $2 $1 " file line target
    shift 2
    for file in "$@"; do
        while IFS=: read -r line target; do
            local top=${target%%/*}
            # the Python extension's own private headers, beside it
            [[ $folder == python && $target != */* && -f python/ptreg/$target ]] && continue
            [[ $target == */* ]] || { report "$file:$line" "$target" "name its folder (\"$folder/...\")"; continue; }
            [[ $allowed == *" $top "* ]] || report "$file:$line" "$target" "$folder/ may not use $top/ (docs/DESIGN.md, layers)"
        done < <(grep -n '^#include "' "$file" | sed -E 's/^([0-9]+):#include "([^"]*)".*/\1:\2/')
    done
}

for folder in "${!may[@]}"; do
    shopt -s nullglob
    files=(src/"$folder"/*.c src/"$folder"/*.h src/"$folder"/*.cl src/"$folder"/*/*.c src/"$folder"/*/*.h src/"$folder"/*/*.cl)
    shopt -u nullglob
    [[ ${#files[@]} -gt 0 ]] || { echo "src/$folder/: no such folder (update tests/layers/check.sh)" >&2; bad=1; continue; }
    check_folder "$folder" "${may[$folder]}" "${files[@]}"
done
for folder in src/*/; do
    folder=${folder#src/}; folder=${folder%/}
    [[ -v may[$folder] ]] || { echo "src/$folder/: not in the layer table (tests/layers/check.sh)" >&2; bad=1; }
done

# The public headers include one another by bare name, nothing private.
while IFS=: read -r file line target; do
    [[ $target != */* && -f include/ptreg/$target ]] || report "$file:$line" "$target" "a public header includes only public headers"
done < <(grep -n '^#include "' include/ptreg/*.h | sed -E 's/^([^:]*):([0-9]+):#include "([^"]*)".*/\1:\2:\3/')

# The Python extension is built on the public API alone.
check_folder python "ptreg" python/ptreg/*.c python/ptreg/*.h
exit $bad
