#!/usr/bin/python3
"""The QDQ bert that scripts/qdq/make_qdq_bert_on_device.py --skeleton made on the GPU machine, rebuilt here
from its skeleton and the zoo's float bert (Debian's python3-onnx and numpy; no onnxruntime needed).

usage: python3 scripts/make_zoo_weights.py bert /tmp/zoo-bert
       python3 scripts/qdq/rebuild_qdq_bert.py SKELETON_DIR /tmp/zoo-bert/bert.onnx OUT.onnx
SKELETON_DIR holds bert_qdq_skeleton.onnx and skeleton.json; every rebuilt initializer is checked against the
sha256 of the original.
"""
import json
import os
import sys

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import skeleton  # noqa: E402

if len(sys.argv) != 4:
    raise SystemExit(__doc__)
src, float_model, out = sys.argv[1:]
model = onnx.load(os.path.join(src, 'bert_qdq_skeleton.onnx'))
recipe = json.load(open(os.path.join(src, 'skeleton.json')))
skeleton.rebuild(model, onnx.load(float_model), recipe)
onnx.save(model, out)
print(f'{out}: {len(recipe)} initializers rebuilt, every hash matches')
