"""Reads a ptreg --html page for the CLI tests (no browser): the page's
description (<script type="application/json" id="ptreg-report">) and its
data blocks (base64 <script id="ptreg-blob-N">), decoded.

    page = report_page.load(path)
    page.layer("keypoints")            # the layer's description, or AssertionError
    page.floats(layer, "positions")    # its blob as float32 values
"""
import array
import base64
import json
import re
import sys

_DESCRIPTION = re.compile(r'<script type="application/json" id="ptreg-report">(.*?)</script>', re.S)
_BLOB = re.compile(r'<script type="application/octet-stream" id="ptreg-blob-(\d+)">(.*?)</script>', re.S)


class Page:
    def __init__(self, text):
        found = _DESCRIPTION.findall(text)
        assert len(found) == 1, "the page has %d report descriptions" % len(found)
        self.description = json.loads(found[0])
        self.blobs = {int(k): base64.b64decode(v) for k, v in _BLOB.findall(text)}
        self.layers = self.description["layers"]
        self.result = self.description["result"]

    def layer(self, name):
        named = [l for l in self.layers if l["name"] == name]
        assert len(named) == 1, "no layer %r (layers: %s)" % (name, [l["name"] for l in self.layers])
        return named[0]

    def names(self):
        return [l["name"] for l in self.layers]

    def floats(self, layer, field):
        a = array.array("f")
        a.frombytes(self.blobs[layer[field]])
        if sys.byteorder != "little":
            a.byteswap()
        return list(a)

    def bytes_of(self, layer, field):
        return self.blobs[layer[field]]


def load(path):
    with open(path, encoding="utf-8") as f:
        return Page(f.read())
