"""Whether two output folders hold the same HTML reports (.html), the run's
numbers aside: a page embeds its command's JSON, whose times differ from run
to run as stdout's do. Every other byte (layers, data, viewer) must match.

    same_pages.py REF_DIR OUT_DIR      exit 0: the same; 1: not
"""
import json
import os
import re
import sys

DESCRIPTION = re.compile(r'(<script type="application/json" id="ptreg-report">)(.*?)(</script>)', re.S)


def without_result(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = DESCRIPTION.search(text)
    if not m:
        return text
    d = json.loads(m.group(2))
    d["result"] = None
    return text[:m.start(2)] + json.dumps(d, sort_keys=True) + text[m.end(2):]


def pages(folder):
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, names in os.walk(folder) for name in names if name.endswith(".html"))


def main(ref, out):
    if pages(ref) != pages(out):
        return 1
    return 0 if all(without_result(os.path.join(ref, p)) == without_result(os.path.join(out, p))
                    for p in pages(ref)) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
