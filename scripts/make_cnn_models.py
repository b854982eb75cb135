#!/usr/bin/python3
"""Writes the convolution nets of `kiln bench --suite cnn` (bench/models/cnn.txt), each as OUT/NAME/NAME.onnx
with its weights inline, and with --small their narrow 64x64 twins, the test data in tests/data/cnn of
tests/onnx/exported_models_test.cpp (kiln eager and compiled against ONNX Runtime).

usage: /usr/bin/python3 scripts/make_cnn_models.py [--small] [OUT_DIR] [NAME...]
       (OUT_DIR default: build/cnn, or tests/data/cnn with --small; NAME: some of the models below)
The suite's fourth model, the zoo's resnet18, is made by scripts/make_zoo_weights.py (bench/models/cnn.txt).
Full size: 3.8, 24 and 13 MB, 1.9, 0.8 and 4.4 GMACs at batch 1; small: under 300 KB each.

  mobilenet_det  a PaddleOCR-style text detector (DBNet): a MobileNetV3-large x0.5 backbone (HardSwish,
                 depthwise 3x3/5x5 convs, squeeze-excite with HardSigmoid), a DB FPN (Resize x2 by scales,
                 Resize to a feature map's size read with Shape, Add, Concat) and the DB head (Conv, BN,
                 ConvTranspose x2, Sigmoid), input x [batch, 3, 640, 640], output [batch, 1, 640, 640]
  audio_cnn      a tf2onnx-style VGGish audio embedding: Conv (auto_pad SAME_UPPER), BatchNormalization
                 left unfolded, LeakyRelu, MaxPool; Transpose to NHWC, Flatten, Gemm, input input_1
                 [batch, 1, 96, 64] log-mel patches, output embedding [batch, 128]
  yolo_det       a YOLOv8n-style detector as Ultralytics exports it: Conv + SiLU (Sigmoid, Mul), C2f blocks
                 (Split, Concat), SPPF (MaxPool 5x5), a PAN neck (Resize, Concat) and the Detect head with
                 its DFL (Reshape, Transpose, Softmax, Conv) and box decoding, input images
                 [batch, 3, 640, 640], output output0 [batch, 84, 8400]

Needs only Debian's python3-onnx (1.12) and numpy. Deterministic: fixed seeds, no timestamps. The weights
are He-initialised and then normalised as a trained net's batch norm would leave them: the graph is run
op by op in numpy (float64) as it is built, on a seeded input (a batch of 8 where the net is small), and
each conv's output's per-channel mean and std (rounded to 4 digits, so that another BLAS's summation
order is most unlikely to change a byte) become the BatchNormalization's running statistics, or are folded into the conv's weight
and bias as exporters fold them. So activations stay O(1) through every layer (also on other inputs:
checked with ONNX Runtime) and no output saturates. Graph forms follow the exporters named; none of
them was run here.
"""
import os
import sys

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))


def conv_np(x, w, stride, pad, group):
    """Conv2d of x [B,C,H,W] with w [O,C/group,k,k], symmetric padding."""
    O, Cg, k, _ = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]  # [B,C,Ho,Wo,k,k]
    B, C, Ho, Wo = win.shape[:4]
    if group == 1:
        y = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # [B,Ho,Wo,O]
        return y.transpose(0, 3, 1, 2)
    assert group == C == O, 'grouped convs other than depthwise are not used'
    return np.einsum('bchwij,cij->bchw', win, w[:, 0])


def maxpool_np(x, k, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    return sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride].max(axis=(4, 5))


def up_np(x, f):
    return x.repeat(f, axis=2).repeat(f, axis=3)


def sig4(a):
    """Rounded to 4 significant digits: the same statistics on every machine, whatever BLAS summed."""
    return np.array([float(f'{v:.4g}') for v in np.ravel(a)]).reshape(np.shape(a))


ACTS = {  # name: (ONNX op, attributes, numpy)
    'relu': ('Relu', {}, lambda v: np.maximum(v, 0)),
    'hswish': ('HardSwish', {}, lambda v: v * np.clip(v + 3, 0, 6) / 6),
    'hsigmoid': ('HardSigmoid', {'alpha': 0.2, 'beta': 0.5}, lambda v: np.clip(0.2 * v + 0.5, 0, 1)),  # Paddle's
    'leaky': ('LeakyRelu', {'alpha': 0.3}, lambda v: np.where(v > 0, v, 0.3 * v)),  # Keras' default alpha
    'sigmoid': ('Sigmoid', {}, lambda v: 1 / (1 + np.exp(-v))),
}


class Net:
    """An ONNX graph built op by op, each op's value computed in numpy on a seeded input of `shape`."""

    def __init__(self, seed, inp, shape):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.val, self.count = [], [], {}, {}
        self.inputs = [helper.make_tensor_value_info(inp, TensorProto.FLOAT, ['batch'] + list(shape[1:]))]
        self.val[inp] = np.random.default_rng(seed + 1000).standard_normal(shape)

    def name(self, prefix):
        i = self.count.get(prefix, 0)
        self.count[prefix] = i + 1
        return f'{prefix.lower()}_{i}'

    def const(self, name, arr):
        arr = np.asarray(arr)
        arr = arr.astype(np.float32 if arr.dtype.kind == 'f' else np.int64)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.val[name] = arr.astype(np.float64) if arr.dtype.kind == 'f' else arr
        return name

    def op(self, op_type, inputs, value, name=None, out=None, **attrs):
        name = name or self.name(op_type)
        out = out or name + '.out'
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        self.val[out] = value
        return out

    def act(self, x, kind, out=None):
        if kind is None:
            return x
        v = self.val[x]
        if kind == 'silu':  # what torch.onnx writes for nn.SiLU below opset 20
            s = self.op('Sigmoid', [x], 1 / (1 + np.exp(-v)))
            return self.op('Mul', [x, s], v * self.val[s], out=out)
        op, attrs, f = ACTS[kind]
        return self.op(op, [x], f(v), out=out, **attrs)

    def normalise(self, y, norm):
        """The weight scale and bias (or BatchNormalization) that give y's channels N(beta, gamma)."""
        c = y.shape[1]
        axes = (0, 2, 3) if y.ndim == 4 and y.size // c >= 64 else None  # too few samples: per tensor
        mean = sig4(np.broadcast_to(y.mean(axis=axes), (c,)))
        std = sig4(np.maximum(np.broadcast_to(y.std(axis=axes), (c,)), 1e-3))
        gamma, beta = np.round(self.rng.uniform(0.6, 1.4, c), 3), np.round(self.rng.normal(0, 0.25, c), 3)
        shape = (1, c) + (1,) * (y.ndim - 2)
        if norm == 'plain':  # no bias, one scale: output std ~1
            s = float(sig4(y.std()))
            return 1 / s, None, y / s
        if norm == 'bn':
            return 1.0, (gamma, beta, mean, std * std), y
        scale = gamma / std
        return scale, beta - mean * scale, (y - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)

    def batchnorm(self, x, stats, eps):
        gamma, beta, mean, var = stats
        n = self.name('BatchNormalization')
        ins = [x] + [self.const(f'{n}.{p}', a) for p, a in zip(('scale', 'bias', 'mean', 'var'), stats)]
        s = (1, -1, 1, 1)
        v = (self.val[x] - mean.reshape(s)) / np.sqrt(var.reshape(s) + eps) * gamma.reshape(s) + beta.reshape(s)
        return self.op('BatchNormalization', ins, v, name=n, epsilon=eps, momentum=0.99)

    def conv(self, x, cout, k=1, s=1, g=1, act=None, norm='fold', auto_pad=False, bn_eps=1e-5, out=None):
        """Conv (+ BatchNormalization with norm='bn') + activation; norm='fold' gives the conv a bias."""
        cin = self.val[x].shape[1]
        w = self.rng.standard_normal((cout, cin // g, k, k)) * np.sqrt(2.0 / (cin // g * k * k))
        scale, bias, y = self.normalise(conv_np(self.val[x], w, s, k // 2, g), norm)
        n = self.name('Conv')
        ins = [x, self.const(n + '.weight', w * np.reshape(scale, (-1, 1, 1, 1)))]
        if norm == 'fold':
            ins.append(self.const(n + '.bias', bias))
        pads = {'auto_pad': 'SAME_UPPER'} if auto_pad else {'pads': [k // 2] * 4}
        has_tail = norm == 'bn' or act is not None
        x = self.op('Conv', ins, y, name=n, out=None if has_tail else out, kernel_shape=[k, k], strides=[s, s],
                    group=g, dilations=[1, 1], **pads)
        if norm == 'bn':
            x = self.batchnorm(x, bias, bn_eps)
        return self.act(x, act, out=out)

    def conv_transpose(self, x, cout, act=None, norm='fold', out=None):
        """ConvTranspose kernel 2 stride 2 (DBNet's upsampling)."""
        v = self.val[x]
        w = self.rng.standard_normal((v.shape[1], cout, 2, 2)) * np.sqrt(2.0 / v.shape[1])
        y = np.einsum('bchw,coij->bohiwj', v, w).reshape(v.shape[0], cout, v.shape[2] * 2, v.shape[3] * 2)
        scale, bias, y = self.normalise(y, norm)
        n = self.name('ConvTranspose')
        ins = [x, self.const(n + '.weight', w * np.reshape(scale, (1, -1, 1, 1)))]
        if norm == 'fold':
            ins.append(self.const(n + '.bias', bias))
        x = self.op('ConvTranspose', ins, y, name=n, kernel_shape=[2, 2], strides=[2, 2])
        if norm == 'bn':
            x = self.batchnorm(x, bias, 1e-5)
        return self.act(x, act, out=out)

    def gemm(self, x, cout, act=None, out=None):
        """Gemm with its weight [K, N] (transB=0, as tf2onnx writes a Dense layer)."""
        w = self.rng.standard_normal((self.val[x].shape[1], cout)) * np.sqrt(2.0 / self.val[x].shape[1])
        scale, bias, y = self.normalise(self.val[x] @ w, 'fold')
        n = self.name('Gemm')
        x = self.op('Gemm', [x, self.const(n + '.weight', w * scale), self.const(n + '.bias', bias)], y, name=n,
                    out=None if act else out, alpha=1.0, beta=1.0, transB=0)
        return self.act(x, act, out=out)

    def resize(self, x, factor=None, sizes=None):
        """Nearest upsampling (asymmetric, floor: what Paddle and PyTorch export), by scales or by sizes."""
        if sizes is None:
            ins = [x, '', self.const(self.name('scales'), [1.0, 1.0, factor, factor])]
        else:
            factor, ins = int(self.val[sizes][2]) // self.val[x].shape[2], [x, '', '', sizes]
        return self.op('Resize', ins, up_np(self.val[x], factor), mode='nearest',
                       coordinate_transformation_mode='asymmetric', nearest_mode='floor')

    def maxpool(self, x, k, s, pad=0):
        return self.op('MaxPool', [x], maxpool_np(self.val[x], k, s, pad), kernel_shape=[k, k], strides=[s, s],
                       pads=[pad] * 4)

    def binary(self, op, a, b, out=None):
        f = {'Add': np.add, 'Sub': np.subtract, 'Mul': np.multiply, 'Div': np.divide}[op]
        return self.op(op, [a, b], f(self.val[a], self.val[b]), out=out)

    def concat(self, xs, axis=1, out=None):
        return self.op('Concat', xs, np.concatenate([self.val[x] for x in xs], axis), axis=axis, out=out)

    def split(self, x, sizes, axis=1):
        n = self.name('Split')
        outs = [f'{n}.out{i}' for i in range(len(sizes))]
        self.nodes.append(helper.make_node('Split', [x, self.const(n + '.split', sizes)], outs, name=n, axis=axis))
        for o, v in zip(outs, np.split(self.val[x], np.cumsum(sizes)[:-1], axis)):
            self.val[o] = v
        return outs

    def reshape(self, x, shape):
        target = [self.val[x].shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return self.op('Reshape', [x, self.const(self.name('shape'), shape)], self.val[x].reshape(target))

    def transpose(self, x, perm):
        return self.op('Transpose', [x], self.val[x].transpose(perm), perm=perm)

    def model(self, outputs, graph_name, producer):
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, ['batch'] + list(self.val[o].shape[1:]))
                for o in outputs]
        for o in outputs:
            v = self.val[o]
            print(f'  {o}: mean {v.mean():.3f} std {v.std():.3f} min {v.min():.3f} max {v.max():.3f}')
        graph = helper.make_graph(self.nodes, graph_name, self.inputs, outs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name=producer)


def divisible(v, d=8):  # Paddle's and torchvision's _make_divisible
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


def mobilenet_det(small):
    """PaddleOCR's det_mv3_db: MobileNetV3-large x0.5 (x0.1 small), DBFPN, DBHead; BN folded (as
    onnxsim leaves the Paddle2ONNX export) except in the head's ConvTranspose layers."""
    res, scale, fpn = (64, 0.1, 16) if small else (640, 0.5, 96)
    net = Net(3, 'x', [8 if small else 1, 3, res, res])
    cfg = [  # kernel, expansion, out channels, squeeze-excite, activation, stride
        (3, 16, 16, False, 'relu', 1), (3, 64, 24, False, 'relu', 2), (3, 72, 24, False, 'relu', 1),
        (5, 72, 40, True, 'relu', 2), (5, 120, 40, True, 'relu', 1), (5, 120, 40, True, 'relu', 1),
        (3, 240, 80, False, 'hswish', 2), (3, 200, 80, False, 'hswish', 1), (3, 184, 80, False, 'hswish', 1),
        (3, 184, 80, False, 'hswish', 1), (3, 480, 112, True, 'hswish', 1), (3, 672, 112, True, 'hswish', 1),
        (5, 672, 160, True, 'hswish', 2), (5, 960, 160, True, 'hswish', 1), (5, 960, 160, True, 'hswish', 1)]
    x = net.conv('x', divisible(16 * scale), 3, s=2, act='hswish')
    feats = []
    for i, (k, exp, c, se, act, s) in enumerate(cfg):
        if s == 2 and i > 2:  # PaddleOCR takes each stage's output before a stride-2 block
            feats.append(x)
        exp, c, inp = divisible(exp * scale), divisible(c * scale), x
        x = net.conv(x, exp, 1, act=act)
        x = net.conv(x, exp, k, s=s, g=exp, act=act)
        if se:
            v = net.val[x]
            p = net.op('GlobalAveragePool', [x], v.mean(axis=(2, 3), keepdims=True))
            p = net.conv(p, exp // 4, 1, act='relu')
            p = net.conv(p, exp, 1, act='hsigmoid')
            x = net.binary('Mul', x, p)
        x = net.conv(x, c, 1)
        if s == 1 and net.val[inp].shape == net.val[x].shape:
            x = net.binary('Add', inp, x)
    feats.append(net.conv(x, divisible(960 * scale), 1, act='hswish'))
    # DBFPN: 1x1 convs to `fpn` channels, top-down x2 Resize by scales + Add, 3x3 convs to fpn/4, each
    # level resized to the stride-4 map's size (read with Shape, as PyTorch's interpolate(size=) exports)
    ins = [net.conv(f, fpn, 1, norm='plain') for f in feats]
    for i in (2, 1, 0):
        ins[i] = net.binary('Add', ins[i], net.resize(ins[i + 1], 2))
    ps = [net.conv(f, fpn // 4, 3, norm='plain') for f in ins]
    shape = lambda t: net.op('Shape', [t], np.array(net.val[t].shape, np.int64))
    sl = lambda t, a, b: net.op('Slice', [t, net.const(net.name('starts'), [a]), net.const(net.name('ends'), [b])],
                                net.val[t][a:b])
    sizes = net.concat([sl(shape(ps[3]), 0, 2), sl(shape(ps[0]), 2, 4)], axis=0)  # Resize's sizes: the full shape
    fused = net.concat([net.resize(ps[3], sizes=sizes), net.resize(ps[2], sizes=sizes),
                        net.resize(ps[1], sizes=sizes), ps[0]])
    # DBHead's binarize branch: 3x3 conv + BN + Relu, ConvTranspose + BN + Relu, ConvTranspose, Sigmoid
    h = net.conv(fused, fpn // 4, 3, act='relu', norm='bn')
    h = net.conv_transpose(h, fpn // 4, act='relu', norm='bn')
    h = net.conv_transpose(h, 1, act='sigmoid', out='sigmoid_0.tmp_0')
    return net.model(['sigmoid_0.tmp_0'], 'mobilenet_det', 'PaddlePaddle')


def audio_cnn(small):
    """tf2onnx's form of a Keras VGGish: NCHW after its transpose optimizer, Conv with auto_pad SAME_UPPER,
    BatchNormalization (epsilon 1e-3, Keras') left unfolded, LeakyRelu, MaxPool 2x2; the NHWC Transpose
    before Flatten that keeps Keras' flatten order; Dense layers as Gemm. VGGish's fc layers are 4096 wide;
    here 128 wide, which keeps the file under 30 MB."""
    widths = (8, 16, 16, 16, 32, 32) if small else (64, 128, 256, 256, 512, 512)
    net = Net(5, 'input_1', [8, 1, 96, 64])
    x = 'input_1'
    for i, c in enumerate(widths):
        x = net.conv(x, c, 3, act='leaky', norm='bn', auto_pad=True, bn_eps=1e-3)
        if i in (0, 1, 3, 5):
            x = net.maxpool(x, 2, 2)
    x = net.transpose(x, [0, 2, 3, 1])
    x = net.op('Flatten', [x], net.val[x].reshape(net.val[x].shape[0], -1), axis=1)
    x = net.gemm(x, 32 if small else 128, act='leaky')
    x = net.gemm(x, 32 if small else 128, out='embedding')
    return net.model(['embedding'], 'audio_cnn', 'tf2onnx')


def yolo_det(small):
    """Ultralytics YOLOv8n exported with dynamic batch (opset 17, BN folded): Conv + SiLU as Sigmoid + Mul,
    C2f (Split, Bottlenecks, Concat), SPPF, the PAN neck with Resize x2 by scales, and Detect: per level a
    box and a class branch, then DFL (softmax over reg_max bins, a fixed 1x1 Conv) and dist2bbox."""
    res, ch, nc, reg_max, box_ch = (64, (8, 8, 16, 16, 16), 8, 8, 16) if small else (640, (16, 32, 64, 128, 256), 80, 16, 64)
    net = Net(7, 'images', [8 if small else 1, 3, res, res])
    conv = lambda x, c, k=1, s=1: net.conv(x, c, k, s=s, act='silu')

    def c2f(x, c2, n, shortcut):
        c = c2 // 2
        ys = net.split(conv(x, 2 * c), [c, c])
        for _ in range(n):
            y = conv(conv(ys[-1], c, 3), c, 3)
            ys.append(net.binary('Add', ys[-1], y) if shortcut else y)
        return conv(net.concat(ys), c2)

    x = conv(conv('images', ch[0], 3, 2), ch[1], 3, 2)
    x = c2f(x, ch[1], 1, True)
    p3 = c2f(conv(x, ch[2], 3, 2), ch[2], 2, True)
    p4 = c2f(conv(p3, ch[3], 3, 2), ch[3], 2, True)
    x = c2f(conv(p4, ch[4], 3, 2), ch[4], 1, True)
    y = [conv(x, ch[4] // 2)]  # SPPF
    for _ in range(3):
        y.append(net.maxpool(y[-1], 5, 1, 2))
    p5 = conv(net.concat(y), ch[4])
    h4 = c2f(net.concat([net.resize(p5, 2), p4]), ch[3], 1, False)
    h3 = c2f(net.concat([net.resize(h4, 2), p3]), ch[2], 1, False)
    h4 = c2f(net.concat([conv(h3, ch[2], 3, 2), h4]), ch[3], 1, False)
    h5 = c2f(net.concat([conv(h4, ch[3], 3, 2), p5]), ch[4], 1, False)
    no, cls_ch = 4 * reg_max + nc, max(ch[2], min(nc, 100))
    levels = []
    for h in (h3, h4, h5):
        box = net.conv(conv(conv(h, box_ch, 3), box_ch, 3), 4 * reg_max, 1)
        cls = net.conv(conv(conv(h, cls_ch, 3), cls_ch, 3), nc, 1)
        levels.append(net.reshape(net.concat([box, cls]), [0, no, -1]))
    box, cls = net.split(net.concat(levels, axis=2), [4 * reg_max, nc])
    # DFL: softmax over the bins, their expectation by a 1x1 conv with weights 0..reg_max-1
    d = net.transpose(net.reshape(box, [0, 4, reg_max, -1]), [0, 2, 1, 3])
    e = np.exp(net.val[d] - net.val[d].max(axis=1, keepdims=True))
    d = net.op('Softmax', [d], e / e.sum(axis=1, keepdims=True), axis=1)
    bins = net.const('dfl.conv.weight', np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1))
    d = net.op('Conv', [d, bins], conv_np(net.val[d], net.val[bins], 1, 0, 1), kernel_shape=[1, 1])
    lt, rb = net.split(net.reshape(d, [0, 4, -1]), [2, 2])
    # dist2bbox against the anchor points (cell centres) and strides of the three levels
    anchors, strides = [], []
    for s in (8, 16, 32):
        g = (np.arange(res // s) + 0.5)
        anchors.append(np.stack([np.tile(g, res // s), np.repeat(g, res // s)]))
        strides.append(np.full(res // s * (res // s), float(s)))
    a = net.const('anchors', np.concatenate(anchors, 1)[None])
    x1y1, x2y2 = net.binary('Sub', a, lt), net.binary('Add', a, rb)
    cxy = net.binary('Div', net.binary('Add', x1y1, x2y2), net.const('two', np.float32(2)))
    wh = net.binary('Sub', x2y2, x1y1)
    dbox = net.binary('Mul', net.concat([cxy, wh]), net.const('strides', np.concatenate(strides)[None]))
    net.concat([dbox, net.act(cls, 'sigmoid')], out='output0')
    return net.model(['output0'], 'yolo_det', 'pytorch')


def save(model, out_dir, name):
    model.ir_version = 8
    model.producer_version = ''
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    os.makedirs(os.path.join(out_dir, name), exist_ok=True)
    path = os.path.join(out_dir, name, name + '.onnx')
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.data_type == TensorProto.FLOAT)
    print(f'{path}: {os.path.getsize(path)} bytes, {params} parameters, {len(model.graph.node)} nodes: ' +
          ', '.join(f'{k} {v}' for k, v in sorted(ops.items(), key=lambda kv: -kv[1])))


MODELS = {'mobilenet_det': mobilenet_det, 'audio_cnn': audio_cnn, 'yolo_det': yolo_det}

if __name__ == '__main__':
    args = sys.argv[1:]
    small = '--small' in args
    args = [a for a in args if a != '--small']
    if any(a.startswith('-') for a in args):
        sys.exit(__doc__)
    out = args[0] if args and args[0] not in MODELS else os.path.join(ROOT, 'tests/data/cnn' if small else 'build/cnn')
    for name in [a for a in args if a in MODELS] or list(MODELS):
        print(name + (' (small)' if small else ''))
        save(MODELS[name](small), out, name)
