"""A QDQ model without its big initializers, and the model rebuilt from that skeleton plus the float model it
was quantized from (used on both machines: the device tool returns at most 16 MiB a file, bert's QDQ form is
~110 MB).

Left out of the skeleton: every 8-bit '<w>_quantized' weight (rebuilt as quantize_nparray does:
q = clip(round(w_f32 / scale_f32) + zero_point), round half to even, in f32) and every float initializer over
64 KiB that the float model holds under the same name with the same bytes. Each entry keeps a sha256 of the
original bytes, and for a weight the (flat index, value) pairs where the formula disagrees with what
onnxruntime wrote, so the rebuild is exact or says why not.
"""
import hashlib

import numpy as np
from onnx import numpy_helper

BIG = 64 << 10
LIMITS = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255)}


def sha(t):
    return hashlib.sha256(numpy_helper.to_array(t).tobytes()).hexdigest()


def requantize(w, scale, zero_point, axis, dtype):
    """The weight quantized with its stored scale and zero point (per tensor, or per `axis`)."""
    w = w.astype(np.float32)
    scale = np.asarray(scale, np.float32)
    zp = np.asarray(zero_point).astype(np.float32)
    if scale.ndim == 1 and scale.size > 1:
        shape = [1] * w.ndim
        shape[axis if axis is not None else 1] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    lo, hi = LIMITS[np.dtype(dtype)]
    return np.clip(np.round(w / scale) + zp, lo, hi).astype(dtype)


def dequantize_params(graph, name):
    """(scale, zero point, axis) names of the DequantizeLinear that reads initializer `name`."""
    for n in graph.node:
        if n.op_type == 'DequantizeLinear' and n.input[0] == name:
            axis = next((a.i for a in n.attribute if a.name == 'axis'), None)
            return n.input[1], (n.input[2] if len(n.input) > 2 else None), axis
    return None


def make_skeleton(qmodel, fmodel):
    """Strips `qmodel` in place; returns the recipe (a dict for skeleton.json)."""
    floats = {t.name: t for t in fmodel.graph.initializer}
    inits = {t.name: t for t in qmodel.graph.initializer}
    left, keep = {}, []
    for t in qmodel.graph.initializer:
        arr = numpy_helper.to_array(t)
        entry = None
        if t.name.endswith('_quantized') and arr.dtype in LIMITS and t.name[:-10] in floats:
            params = dequantize_params(qmodel.graph, t.name)
            if params:
                s, z, axis = params
                zp = numpy_helper.to_array(inits[z]) if z else np.zeros((), arr.dtype)
                again = requantize(numpy_helper.to_array(floats[t.name[:-10]]), numpy_helper.to_array(inits[s]), zp, axis,
                                   arr.dtype)
                diff = np.flatnonzero(again.reshape(-1) != arr.reshape(-1))
                if diff.size <= 10000:
                    entry = {'kind': 'quantized', 'source': t.name[:-10], 'scale': s, 'zero_point': z, 'axis': axis,
                             'dtype': str(arr.dtype), 'fix': [[int(i), int(arr.reshape(-1)[i])] for i in diff]}
        elif arr.nbytes > BIG and t.name in floats and sha(floats[t.name]) == sha(t):
            entry = {'kind': 'copy', 'source': t.name}
        if entry is None:
            keep.append(t)
        else:
            entry['sha256'] = sha(t)
            left[t.name] = entry
    del qmodel.graph.initializer[:]
    qmodel.graph.initializer.extend(keep)
    return left


def rebuild(skeleton, fmodel, recipe):
    """Puts the left-out initializers back into `skeleton` (in place), checking each hash."""
    floats = {t.name: t for t in fmodel.graph.initializer}
    inits = {t.name: t for t in skeleton.graph.initializer}
    for name, e in recipe.items():
        src = numpy_helper.to_array(floats[e['source']])
        if e['kind'] == 'copy':
            arr = src
        else:
            zp = numpy_helper.to_array(inits[e['zero_point']]) if e['zero_point'] else np.zeros((), e['dtype'])
            arr = requantize(src, numpy_helper.to_array(inits[e['scale']]), zp, e['axis'], np.dtype(e['dtype']))
            flat = arr.reshape(-1)
            for i, v in e['fix']:
                flat[i] = v
        t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
        if sha(t) != e['sha256']:
            raise SystemExit(f'{name}: the rebuilt bytes differ from the original (sha256)')
        skeleton.graph.initializer.append(t)
