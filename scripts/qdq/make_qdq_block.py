#!/usr/bin/python3
"""A BERT-like block in the QDQ form that onnxruntime.quantization.quantize_static(quant_format=QDQ)
writes, built by hand with Debian's python3-onnx 1.12 and numpy (no onnxruntime needed), and the float
model it was quantized from (<name>_fp32.onnx: ONNX Runtime's int8-vs-fp32 difference is the yardstick
of tests/onnx/exported_models_test.cpp's QDQ rule). Deterministic (fixed seeds).

usage: /usr/bin/python3 scripts/qdq/make_qdq_block.py tests/data/exported

What it copies from ORT's quantizer (onnxruntime/python/tools/quantization: qdq_quantizer.py,
quant_utils.py, operators/matmul.py):
  * weights: '<w>_quantized' int8 initializer, '<w>_scale', '<w>_zero_point', node '<w>_DequantizeLinear'
    writing '<w>_DequantizeLinear_Output'; symmetric int8 in [-127, 127], zero point 0,
    scale = 2*absmax/254 computed in f64 then stored f32; q = clip(round(w / scale) + zp) in f32 (quantize_nparray);
    per_channel: scale/zero point [N], DequantizeLinear axis=1 (QDQOpTypePerChannelSupportToAxis default for MatMul).
  * activations: '<t>_QuantizeLinear' -> '<t>_QuantizeLinear_Output' -> '<t>_DequantizeLinear' ->
    '<t>_DequantizeLinear_Output', '<t>_scale' / '<t>_zero_point' scalars; asymmetric MinMax calibration
    (range widened to include 0; s8: [-128, 127], u8: [0, 255]; zp = round(qmin - rmin / scale)).
  * one Q/DQ pair per tensor shared by every consumer (DedicatedQDQPair=False).
  * ops quantized by default (union of QLinearOpsRegistry and QDQRegistry): MatMul (inputs and output),
    Add, Mul, Softmax, Reshape, Transpose (inputs and output); Div and Erf stay float.
  * an Add's constant operand (the bias) becomes an 8-bit initializer of the activation type with a DQ
    (uncertain: its symmetry; asymmetric here).
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, U8, I8 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8


class Builder:
    def __init__(self, act, per_channel, seed):
        self.act, self.per_channel = act, per_channel
        self.nodes, self.inits, self.vals, self.dq = [], [], {}, {}
        self.src, self.float_inits = {}, []  # DQ output -> float source; the float model's constants
        self.rng = np.random.default_rng(seed)

    def init(self, name, arr):
        arr = np.asarray(arr)  # np.ascontiguousarray would make a 0-d scale [1]; ORT writes scalars
        self.inits.append(numpy_helper.from_array(arr if arr.ndim == 0 else np.ascontiguousarray(arr), name))
        return name

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out + '_node' if op not in ('QuantizeLinear', 'DequantizeLinear') else out, **attrs))
        return out

    # Activation Q -> DQ, once per tensor (shared by its consumers).
    def fq(self, t):
        if t in self.dq:
            return self.dq[t]
        v = self.vals[t]
        qmin, qmax, dt = (-128, 127, np.int8) if self.act == 's8' else (0, 255, np.uint8)
        rmin, rmax = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
        scale = np.float32((rmax - rmin) / (qmax - qmin)) if rmax > rmin else np.float32(1.0)
        zp = dt(np.clip(round(qmin - rmin / float(scale)), qmin, qmax))
        self.init(t + '_scale', np.array(scale, np.float32)), self.init(t + '_zero_point', np.array(zp, dt))
        self.nodes.append(helper.make_node('QuantizeLinear', [t, t + '_scale', t + '_zero_point'],
                                           [t + '_QuantizeLinear_Output'], name=t + '_QuantizeLinear'))
        self.nodes.append(helper.make_node('DequantizeLinear', [t + '_QuantizeLinear_Output', t + '_scale', t + '_zero_point'],
                                           [t + '_DequantizeLinear_Output'], name=t + '_DequantizeLinear'))
        self.dq[t] = t + '_DequantizeLinear_Output'
        self.src[self.dq[t]] = t
        return self.dq[t]

    # A constant operand: int8 weight (MatMul B) or an activation-type 8-bit initializer (Add's bias).
    def const(self, name, w, weight):
        if weight:
            axis = 0 if not self.per_channel else None
            absmax = np.abs(w).max(axis=0) if self.per_channel else np.abs(w).max()
            scale = (2.0 * np.asarray(absmax, np.float64) / 254.0).astype(np.float32)
            q = np.clip(np.round(w.astype(np.float32) / scale), -127, 127).astype(np.int8)
            zp = np.zeros_like(scale, dtype=np.int8)
        else:
            self.vals[name] = w
            qmin, qmax, dt = (-128, 127, np.int8) if self.act == 's8' else (0, 255, np.uint8)
            rmin, rmax = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
            scale = np.array((rmax - rmin) / (qmax - qmin), np.float32)
            zp = np.array(np.clip(round(qmin - rmin / float(scale)), qmin, qmax), dt)
            q = np.clip(np.round(w / scale) + zp.astype(np.float32), qmin, qmax).astype(dt)
        self.init(name + '_quantized', q), self.init(name + '_scale', scale), self.init(name + '_zero_point', zp)
        attrs = {'axis': 1} if weight and self.per_channel else {}
        self.nodes.append(helper.make_node('DequantizeLinear', [name + '_quantized', name + '_scale', name + '_zero_point'],
                                           [name + '_DequantizeLinear_Output'], name=name + '_DequantizeLinear', **attrs))
        self.src[name + '_DequantizeLinear_Output'] = name
        self.float_inits.append(numpy_helper.from_array(np.asarray(w, np.float32), name))
        return name + '_DequantizeLinear_Output', w

    def matmul(self, a, out, w=None, b=None):
        if w is not None:
            bname, bval = self.const(out + '.weight', w, True)
        else:
            bname, bval = self.fq(b), self.vals[b]
        self.vals[out] = self.vals[a] @ bval
        return self.node('MatMul', [self.fq(a), bname], out)

    def add(self, a, out, bias=None, b=None):
        if bias is not None:
            bname, bval = self.const(out + '.bias', bias, False)
            bname = bname
        else:
            bname, bval = self.fq(b), self.vals[b]
        self.vals[out] = self.vals[a] + bval
        return self.node('Add', [self.fq(a), bname], out)


def qdq_block(act='s8', per_channel=False, seed=31, B=2, S=8, D=16, H=2, F=32):
    """Attention + GELU MLP, as quantize_static(QDQ) of a BERT layer writes it (see the module doc)."""
    b = Builder(act, per_channel, seed)
    r = b.rng
    w = lambda *s: (r.standard_normal(s) * 0.25).astype(np.float32)
    b.vals['x'] = r.standard_normal((8, S, D)).astype(np.float32)  # calibration batch of 8
    q = b.add(b.matmul('x', 'q_mm', w(D, D)), 'q', bias=w(D))
    k = b.add(b.matmul('x', 'k_mm', w(D, D)), 'k', bias=w(D))
    v = b.add(b.matmul('x', 'v_mm', w(D, D)), 'v', bias=w(D))
    dh = D // H
    shape = b.init('heads_shape', np.array([0, S, H, dh], np.int64))
    for t in ('q', 'k', 'v'):  # Reshape and Transpose: inputs and outputs quantized (QDQDirect8BitOp)
        b.vals[t + '_r'] = b.vals[t].reshape(-1, S, H, dh)
        b.node('Reshape', [b.fq(t), shape], t + '_r')
        perm = [0, 2, 3, 1] if t == 'k' else [0, 2, 1, 3]
        b.vals[t + '_t'] = b.vals[t + '_r'].transpose(perm)
        b.node('Transpose', [b.fq(t + '_r')], t + '_t', perm=perm)
    s = b.matmul('q_t', 'scores', b='k_t')                                   # activation x activation
    b.vals['scaled'] = b.vals[s] * np.float32(1 / math.sqrt(dh))
    sc, _ = b.const('scaled.scale', np.array(1 / math.sqrt(dh), np.float32), False)
    b.node('Mul', [b.fq(s), sc], 'scaled')
    e = np.exp(b.vals['scaled'] - b.vals['scaled'].max(-1, keepdims=True))
    b.vals['probs'] = e / e.sum(-1, keepdims=True)
    b.node('Softmax', [b.fq('scaled')], 'probs', axis=-1)
    ctx = b.matmul('probs', 'ctx_t', b='v_t')
    b.vals['ctx_p'] = b.vals[ctx].transpose(0, 2, 1, 3)
    b.node('Transpose', [b.fq(ctx)], 'ctx_p', perm=[0, 2, 1, 3])
    b.vals['ctx'] = b.vals['ctx_p'].reshape(-1, S, D)
    b.node('Reshape', [b.fq('ctx_p'), b.init('merge_shape', np.array([0, S, D], np.int64))], 'ctx')
    o = b.add(b.matmul('ctx', 'o_mm', w(D, D)), 'o', bias=w(D))
    res = b.add(o, 'res1', b='x')
    h = b.add(b.matmul(res, 'fc1_mm', w(D, F)), 'fc1', bias=w(F))
    # GELU: Div and Erf float, its Add and Muls quantized (they are in QLinearOpsRegistry)
    b.vals['g_div'] = b.vals[h] / np.float32(math.sqrt(2))
    b.node('Div', [b.fq(h), b.init('sqrt2', np.array(math.sqrt(2), np.float32))], 'g_div')
    b.vals['g_erf'] = np.vectorize(math.erf)(b.vals['g_div']).astype(np.float32)
    b.node('Erf', ['g_div'], 'g_erf')
    one, _ = b.const('g_add.one', np.array(1.0, np.float32), False)
    b.vals['g_add'] = b.vals['g_erf'] + 1
    b.node('Add', [b.fq('g_erf'), one], 'g_add')
    b.vals['g_mul'] = b.vals[h] * b.vals['g_add']
    b.node('Mul', [b.fq(h), b.fq('g_add')], 'g_mul')
    half, _ = b.const('g_half.half', np.array(0.5, np.float32), False)
    b.vals['gelu'] = b.vals['g_mul'] * 0.5
    b.node('Mul', [b.fq('g_mul'), half], 'gelu')
    y2 = b.add(b.matmul('gelu', 'fc2_mm', w(F, D)), 'fc2', bias=w(D))
    b.vals['y'] = b.vals[y2] + b.vals[res]
    b.node('Add', [b.fq(y2), b.fq(res)], 'y_pre')
    b.vals['y_pre'] = b.vals['y']
    b.node('Identity', [b.fq('y_pre')], 'y')  # the output's own Q/DQ, as quantize_static writes for a quantized Add
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(b.nodes, 'qdq_block', [vi('x', F32, ['batch', S, D])], [vi('y', F32, ['batch', S, D])], b.inits)
    qdq = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='onnx.quantize')
    # The float model the quantizer started from: the same nodes without Q/DQ (for the int8-vs-fp32 error).
    fnodes = []
    for n in b.nodes:
        if n.op_type in ('QuantizeLinear', 'DequantizeLinear'):
            continue
        m = helper.make_node(n.op_type, [b.src.get(i, i) for i in n.input], list(n.output), name=n.name)
        m.attribute.extend(n.attribute)
        fnodes.append(m)
    used = {i for n in fnodes for i in n.input}
    finits = [t for t in b.inits if t.name in used] + b.float_inits
    fgraph = helper.make_graph(fnodes, 'fp32_block', [vi('x', F32, ['batch', S, D])], [vi('y', F32, ['batch', S, D])], finits)
    return qdq, helper.make_model(fgraph, opset_imports=[helper.make_opsetid('', 13)], producer_name='pytorch')


if __name__ == '__main__':
    out = sys.argv[1] if len(sys.argv) > 1 else '.'
    os.makedirs(out, exist_ok=True)
    for name, kw in [('qdq_block_s8', {}), ('qdq_block_u8_per_channel', dict(act='u8', per_channel=True))]:
        for suffix, m in zip(('', '_fp32'), qdq_block(**kw)):
            m.ir_version = 7
            onnx.checker.check_model(m)
            onnx.shape_inference.infer_shapes(m, strict_mode=True)
            path = os.path.join(out, name + suffix + '.onnx')
            with open(path, 'wb') as f:
                f.write(m.SerializeToString())
            ops = {}
            for n in m.graph.node:
                ops[n.op_type] = ops.get(n.op_type, 0) + 1
            print(path, os.path.getsize(path), 'bytes', ops)
