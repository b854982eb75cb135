#!/usr/bin/python3
"""Writes an fp16 copy of an fp32 ONNX model, as converters of exported models do (every float32
initializer, Constant, input, output and value_info in float16, Casts to float32 retargeted to float16),
for timing kiln's compiled f16 graphs beside ONNX Runtime. Debian's python3-onnx (1.12) and numpy only.

  scripts/make_fp16_model.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def to_f16(t):
    if t.data_type != F32:
        return t
    h = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)
    return h


def retype(vi):
    tt = vi.type.tensor_type
    if tt.elem_type == F32:
        tt.elem_type = F16


def convert_graph(g):
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(to_f16(t))
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        retype(vi)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(to_f16(a.t))
            elif a.type == onnx.AttributeProto.GRAPH:
                convert_graph(a.g)
            if n.op_type == "Cast" and a.name == "to" and a.i == F32:
                a.i = F16


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    m = onnx.load(sys.argv[1])
    convert_graph(m.graph)
    onnx.save(m, sys.argv[2])


if __name__ == "__main__":
    main()
