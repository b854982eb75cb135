#!/usr/bin/env python3
"""For the GPU machine (python3 with onnx 1.23, onnxruntime 1.30, numpy): the zoo bert quantized by
onnxruntime.quantization.quantize_static in QDQ format, ORT's own int8 and fp32 runs on the same seeded
inputs, and what ORT fused the QDQ graph into.

usage (repo root, on the device):
  python3 scripts/make_zoo_weights.py bert /tmp/zoo-bert
  python3 scripts/qdq/make_qdq_bert_on_device.py /tmp/zoo-bert/bert.onnx /tmp/qbert [--act u8|s8] [--per-channel] [--seq 128]
      [--calib 16] [--threads 16] [--skeleton]
writes /tmp/qbert/bert_qdq.onnx, inputs/*.npy (kiln run --input NAME=FILE), ort_fp32/*.npy, ort_int8/*.npy,
and prints op counts (quantized and ORT-optimized), latencies and the int8-vs-fp32 error.
--skeleton also writes bert_qdq_skeleton.onnx and skeleton.json (scripts/qdq/skeleton.py: the int8 weights
and the float initializers the zoo model holds left out, with what rebuilds them); scripts/qdq/
rebuild_qdq_bert.py puts them back on a machine without onnxruntime (the model itself is over the device
tool's 16 MiB-a-file limit).
"""
import argparse
import collections
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

ap = argparse.ArgumentParser()
ap.add_argument('model'), ap.add_argument('out')
ap.add_argument('--act', default='u8', choices=['u8', 's8'])  # u8: what ORT fuses on x86 (s8 stays partly float)
ap.add_argument('--per-channel', action='store_true')
ap.add_argument('--seq', type=int, default=128), ap.add_argument('--calib', type=int, default=16)
ap.add_argument('--threads', type=int, default=0), ap.add_argument('--iters', type=int, default=50)
ap.add_argument('--skeleton', action='store_true')
# Only the MatMuls (their inputs and outputs): the additive attention mask (the float minimum after its
# Where) then stays float. Quantizing every op type gave ORT int8 vs fp32 a relative L2 of 0.73 on the zoo
# bert (session 22), the mask's range swamping its Add's scale. (This option has not been run yet.)
ap.add_argument('--matmul-only', action='store_true')
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
VOCAB = 30522


def feeds(seed):
    r = np.random.default_rng(seed)
    mask = np.ones((1, a.seq), np.int64)
    mask[0, a.seq - r.integers(0, a.seq // 4):] = 0  # some padding, as real batches have
    return {'input_ids': r.integers(0, VOCAB, (1, a.seq), dtype=np.int64), 'attention_mask': mask}


class Reader(CalibrationDataReader):
    def __init__(self):
        self.it = iter([feeds(100 + i) for i in range(a.calib)])

    def get_next(self):
        return next(self.it, None)


qpath = os.path.join(a.out, 'bert_qdq.onnx')
t0 = time.time()
quantize_static(a.model, qpath, Reader(), quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8 if a.act == 'u8' else QuantType.QInt8, weight_type=QuantType.QInt8,
                per_channel=a.per_channel, op_types_to_quantize=['MatMul'] if a.matmul_only else None,
                extra_options={'ActivationSymmetric': False, 'WeightSymmetric': True})
print(f'quantize_static: {time.time() - t0:.0f} s')
q = onnx.load(qpath)
count = lambda g: dict(collections.Counter((n.domain + ':' if n.domain else '') + n.op_type for n in g.node).most_common())
print('QDQ model:', count(q.graph))
prod = {o: n for n in q.graph.node for o in n.output}
inits = {i.name: i for i in q.graph.initializer}
for n in [n for n in q.graph.node if n.op_type == 'MatMul'][:8]:  # the pattern around the first MatMuls
    desc = []
    for v in n.input:
        d = prod.get(v)
        if d is None:
            desc.append(v)
            continue
        ins = [(i, onnx.TensorProto.DataType.Name(inits[i].data_type), list(inits[i].dims)) if i in inits else
               (i, prod[i].op_type if i in prod else 'input') for i in d.input]
        desc.append((d.op_type, ins, {t.name: t.i for t in d.attribute}))
    print(' ', n.name, desc, '->', [c.op_type for c in q.graph.node if n.output[0] in c.input])

so = ort.SessionOptions()
so.intra_op_num_threads = a.threads
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.optimized_model_filepath = os.path.join(a.out, 'bert_qdq.ort_optimized.onnx')
s8 = ort.InferenceSession(qpath, so, providers=['CPUExecutionProvider'])
print('ORT-optimized:', count(onnx.load(so.optimized_model_filepath).graph))
fo = ort.SessionOptions()
fo.intra_op_num_threads = a.threads
s32 = ort.InferenceSession(a.model, fo, providers=['CPUExecutionProvider'])
x = feeds(1)
for d, arrays in [('inputs', x), ('ort_fp32', dict(zip([o.name for o in s32.get_outputs()], s32.run(None, x)))),
                  ('ort_int8', dict(zip([o.name for o in s8.get_outputs()], s8.run(None, x))))]:
    os.makedirs(os.path.join(a.out, d), exist_ok=True)
    for k, v in arrays.items():
        np.save(os.path.join(a.out, d, k + '.npy'), v)
for name, s in [('fp32', s32), ('int8', s8)]:
    for _ in range(5):
        s.run(None, x)
    ts = []
    for _ in range(a.iters):
        t = time.perf_counter()
        s.run(None, x)
        ts.append((time.perf_counter() - t) * 1e3)
    print(f'ORT {name}: median {np.median(ts):.2f} ms, min {min(ts):.2f} ms ({a.iters} runs, threads {a.threads or "all"})')
y32, y8 = s32.run(None, x)[0], s8.run(None, x)[0]
print(f'ORT int8 vs fp32: rel L2 {np.linalg.norm(y8 - y32) / np.linalg.norm(y32):.3g}, max abs {np.abs(y8 - y32).max():.3g}')

if a.skeleton:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import skeleton
    left = skeleton.make_skeleton(q, onnx.load(a.model))
    onnx.save(q, os.path.join(a.out, 'bert_qdq_skeleton.onnx'))
    json.dump(left, open(os.path.join(a.out, 'skeleton.json'), 'w'), indent=1)
    fixes = sum(len(e.get('fix', [])) for e in left.values())
    print(f'skeleton: {len(left)} initializers left out, {fixes} weight values where the formula disagrees')
