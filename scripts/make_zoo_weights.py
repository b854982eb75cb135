#!/usr/bin/python3
"""Writes the external weight file of a zoo model (tests/data/zoo) from the statistics in its manifest.

The zoo's .onnx files hold the graphs; every float initializer over 4 KiB lives in <model>.weights.bin,
which is not kept in the repository. The manifest lists those tensors in file order with their
dims and the mean/std/min/max of the original random initialisation. This draws each tensor from a
normal distribution with those statistics, clipped to [min, max] (a constant where std is 0), seeded
from the model and tensor names: the same bytes on every machine.

usage: make_zoo_weights.py MODEL OUT_DIR   (copies MODEL.onnx into OUT_DIR and writes the weights beside it)
Needs Debian's python3-numpy.
"""
import json
import os
import shutil
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "tests", "data", "zoo")
NUMPY_TYPE = {"FLOAT": np.float32, "FLOAT16": np.float16, "DOUBLE": np.float64}


def draw(model, tensor):
    count = int(np.prod(tensor["dims"], dtype=np.int64)) if tensor["dims"] else 1
    kind = NUMPY_TYPE[tensor["dtype"]]
    if not tensor["std"]:
        return np.full(count, tensor["mean"], dtype=kind)
    rng = np.random.default_rng(zlib.crc32(f"{model}/{tensor['name']}".encode()))
    values = rng.normal(tensor["mean"], tensor["std"], count)
    return np.clip(values, tensor["min"], tensor["max"]).astype(kind)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model, out = sys.argv[1], sys.argv[2]
    info = json.load(open(os.path.join(ZOO, "manifest.json")))["models"].get(model)
    if info is None:
        sys.exit(f"make_zoo_weights: no model {model!r} in the manifest")
    os.makedirs(out, exist_ok=True)
    shutil.copyfile(os.path.join(ZOO, info["graph_file"]), os.path.join(out, info["graph_file"]))
    target = os.path.join(out, info["weights_file_not_shipped"])
    if os.path.exists(target) and os.path.getsize(target) == info["external_total_bytes"]:
        return
    partial = target + ".part"
    with open(partial, "wb") as f:
        for tensor in info["external_tensors"]:
            data = draw(model, tensor).tobytes()
            if len(data) != tensor["nbytes"]:
                sys.exit(f"make_zoo_weights: {tensor['name']}: {len(data)} bytes, manifest says {tensor['nbytes']}")
            f.write(data)
    if os.path.getsize(partial) != info["external_total_bytes"]:
        sys.exit("make_zoo_weights: total size differs from the manifest")
    os.replace(partial, target)


if __name__ == "__main__":
    main()
