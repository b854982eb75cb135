#!/usr/bin/python3
"""Writes small ONNX models in the shapes that common exporters write, into tests/data/exported/
(or the folder given): the test data of tests/onnx/exported_models_test.cpp, which runs each in kiln's
eager and compiled mode and compares against ONNX Runtime run at test time.

usage: /usr/bin/python3 scripts/make_exported_models.py [OUT_DIR]

Needs only Debian's python3-onnx (1.12) and numpy. Deterministic: fixed seeds, no timestamps, so
running it again writes the same bytes. The models are written by hand with onnx.helper in the forms
each exporter is known to emit; where an exporter detail is uncertain the comment says so. None of
the exporters was run here (Paddle2ONNX, tf2onnx, PyTorch and onnxruntime.quantization are not
installed): what matters is that these forms run correctly in kiln.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'tests', 'data', 'exported')
F32, F16, I64, I32, U8 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.INT32, TensorProto.UINT8


def init(name, arr):
    return numpy_helper.from_array(np.ascontiguousarray(arr), name)


def const_node(out, arr):
    return helper.make_node('Constant', [], [out], value=numpy_helper.from_array(np.asarray(arr), out + '_value'))


def save(model, name, ir_version):
    model.ir_version = ir_version
    model.producer_version = ''
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)  # the shapes must agree, as the exporters' do
    path = os.path.join(OUT, name + '.onnx')
    with open(path, 'wb') as f:
        f.write(model.SerializeToString())
    print(f'{path}: {os.path.getsize(path)} bytes, {len(model.graph.node)} nodes')


def paddle_opset9():
    """Paddle2ONNX at opset 9: a conv/BN/relu6/pool classifier with an FPN-like upsampled skip.

    Opset-9 forms: BatchNormalization-9 (no spatial attribute), Upsample-9 (scales as an input), Slice-1
    (starts/ends/axes attributes), Pad-2 (pads attribute), Clip-6 (min/max attributes, what relu6
    becomes below opset 11), Unsqueeze-1 (axes attribute), Flatten-9, Gemm-9, Softmax-1, and the
    Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain that a reshape(x, [batch, -1]) with a
    run-time batch becomes. The batch dim is named as newer Paddle2ONNX names it
    ('p2o.DynamicDimension.0'; older versions wrote -1). Node names follow Paddle's '<op>_<n>' style.
    Uncertain: whether Paddle2ONNX writes the fc layer as MatMul + Add or as Gemm depends on its version
    and on the op (fc vs matmul_v2 + elementwise_add); both forms are used here.
    """
    rng = np.random.default_rng(9)
    f = lambda *s, scale=0.3: (rng.standard_normal(s) * scale).astype(np.float32)
    batch = 'p2o.DynamicDimension.0'
    inits = [
        init('conv2d_0.w_0', f(8, 3, 3, 3)), init('conv2d_0.b_0', f(8)),
        init('batch_norm_0.w_0', (1 + f(8, scale=0.1))), init('batch_norm_0.b_0', f(8, scale=0.1)),
        init('batch_norm_0.w_1', f(8, scale=0.1)), init('batch_norm_0.w_2', (0.5 + np.abs(f(8))).astype(np.float32)),
        init('conv2d_1.w_0', f(8, 8, 3, 3, scale=0.15)),
        init('upsample_scales', np.array([1, 1, 2, 2], np.float32)),
        init('fc_0.w_0', f(104, 32, scale=0.1)), init('fc_0.b_0', f(32, scale=0.1)),
        init('fc_1.w_0', f(10, 32, scale=0.2)), init('fc_1.b_0', f(10, scale=0.1)),
        init('reshape_tail', np.array([-1], np.int64)),
    ]
    n = helper.make_node
    nodes = [
        n('Conv', ['image', 'conv2d_0.w_0', 'conv2d_0.b_0'], ['conv2d_0.tmp_0'], name='conv2d_0',
          kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1),
        n('BatchNormalization', ['conv2d_0.tmp_0', 'batch_norm_0.w_0', 'batch_norm_0.b_0', 'batch_norm_0.w_1',
                                 'batch_norm_0.w_2'], ['batch_norm_0.tmp_2'], name='batch_norm_0',
          epsilon=1e-5, momentum=0.9),
        n('Relu', ['batch_norm_0.tmp_2'], ['relu_0.tmp_0'], name='relu_0'),                       # [B,8,16,16]
        n('MaxPool', ['relu_0.tmp_0'], ['pool2d_0.tmp_0'], name='pool2d_0', kernel_shape=[2, 2],
          strides=[2, 2], pads=[0, 0, 0, 0]),                                                      # [B,8,8,8]
        n('Upsample', ['pool2d_0.tmp_0', 'upsample_scales'], ['nearest_interp_0.tmp_0'],
          name='nearest_interp_0', mode='nearest'),                                                # [B,8,16,16]
        n('Add', ['relu_0.tmp_0', 'nearest_interp_0.tmp_0'], ['elementwise_add_0'], name='elementwise_add_0'),
        n('Clip', ['elementwise_add_0'], ['relu6_0.tmp_0'], name='relu6_0', min=0.0, max=6.0),
        n('Pad', ['relu6_0.tmp_0'], ['pad2d_0.tmp_0'], name='pad2d_0', mode='constant', value=0.0,
          pads=[0, 0, 1, 1, 0, 0, 1, 1]),                                                          # [B,8,18,18]
        n('Conv', ['pad2d_0.tmp_0', 'conv2d_1.w_0'], ['conv2d_1.tmp_0'], name='conv2d_1',
          kernel_shape=[3, 3], pads=[0, 0, 0, 0], strides=[2, 2]),                                 # [B,8,8,8]
        n('Slice', ['conv2d_1.tmp_0'], ['slice_0.tmp_0'], name='slice_0', axes=[1], starts=[0], ends=[6]),
        n('MaxPool', ['slice_0.tmp_0'], ['pool2d_1.tmp_0'], name='pool2d_1', kernel_shape=[2, 2],
          strides=[2, 2]),                                                                          # [B,6,4,4]
        # reshape(x, [batch, -1]) with the batch read at run time
        n('Shape', ['pool2d_1.tmp_0'], ['shape_0.tmp_0'], name='shape_0'),
        const_node('gather_idx', np.array(0, np.int64)),
        n('Gather', ['shape_0.tmp_0', 'gather_idx'], ['gather_0.tmp_0'], name='gather_0', axis=0),
        n('Unsqueeze', ['gather_0.tmp_0'], ['unsqueeze_0.tmp_0'], name='unsqueeze_0', axes=[0]),
        n('Concat', ['unsqueeze_0.tmp_0', 'reshape_tail'], ['concat_0.tmp_0'], name='concat_0', axis=0),
        n('Cast', ['concat_0.tmp_0'], ['cast_0.tmp_0'], name='cast_0', to=I64),
        n('Reshape', ['pool2d_1.tmp_0', 'cast_0.tmp_0'], ['reshape2_0.tmp_0'], name='reshape2_0'),  # [B,96]
        n('GlobalAveragePool', ['relu6_0.tmp_0'], ['pool2d_2.tmp_0'], name='pool2d_2'),           # [B,8,1,1]
        n('Flatten', ['pool2d_2.tmp_0'], ['flatten_0.tmp_0'], name='flatten_0', axis=1),         # [B,8]
        n('Concat', ['reshape2_0.tmp_0', 'flatten_0.tmp_0'], ['concat_1.tmp_0'], name='concat_1', axis=1),
        n('MatMul', ['concat_1.tmp_0', 'fc_0.w_0'], ['fc_0.tmp_0'], name='fc_0'),
        n('Add', ['fc_0.tmp_0', 'fc_0.b_0'], ['fc_0.tmp_1'], name='fc_0_add'),
        n('Relu', ['fc_0.tmp_1'], ['fc_0.tmp_2'], name='relu_1'),
        n('Gemm', ['fc_0.tmp_2', 'fc_1.w_0', 'fc_1.b_0'], ['fc_1.tmp_1'], name='fc_1', alpha=1.0, beta=1.0,
          transA=0, transB=1),
        n('Softmax', ['fc_1.tmp_1'], ['softmax_0.tmp_0'], name='softmax_0', axis=1),
        n('ArgMax', ['fc_1.tmp_1'], ['arg_max_0.tmp_0'], name='arg_max_0', axis=1, keepdims=0),
        n('Cast', ['arg_max_0.tmp_0'], ['cast_1.tmp_0'], name='cast_1', to=I32),
    ]
    graph = helper.make_graph(
        nodes, 'paddle_opset9', [helper.make_tensor_value_info('image', F32, [batch, 3, 16, 16])],
        [helper.make_tensor_value_info('softmax_0.tmp_0', F32, [batch, 10]),
         helper.make_tensor_value_info('cast_1.tmp_0', I32, [batch])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 9)], producer_name='PaddlePaddle')
    save(m, 'paddle_opset9', 4)  # Paddle2ONNX writes IR 4 with opset 9 (uncertain; onnx maps opset 9 to IR 4)


def tf2onnx_if():
    """tf2onnx (opset 13): a Keras-style NHWC model whose tf.cond became If nodes.

    - NHWC input; Transpose to NCHW around Conv and back, as tf2onnx writes before its optimizer
      removes the pairs it can; dim names 'unk__N' for unknown sizes; tensor names 'name:0'.
    - If #1 (cond foldable: Shape -> Cast to int32 -> Gather -> Cast to int64 -> Equal on the static H)
      whose branches read outer values (the conv output and an outer initializer) by name.
    - If #2 (cond at run time: ReduceMean of the data against the 'threshold:0' input), its branches
      reading the outer value too and reducing with keepdims=1, then Squeeze-13 (axes as an input).
    - Identity on the outputs, Cast of ArgMax's int64 to int32 (tf.argmax(output_type=tf.int32)).
    Uncertain: the exact Cast/Shape chain tf2onnx writes for tf.shape(x)[1] == 8 (it writes int32
    shapes, as TensorFlow's are, with Casts around ONNX's int64 ones); here it is one plausible form.
    """
    rng = np.random.default_rng(13)
    f = lambda *s, scale=0.3: (rng.standard_normal(s) * scale).astype(np.float32)
    inits = [
        init('conv2d/Conv2D/ReadVariableOp:0', f(4, 3, 3, 3)), init('conv2d/BiasAdd/ReadVariableOp:0', f(4)),
        init('const_fold_opt__7', np.array(1, np.int32)), init('const_8:0', np.array(8, np.int64)),
        init('scale/ReadVariableOp:0', np.array([1.5, -0.5, 2.0, 0.25], np.float32)),
        init('squeeze_axes', np.array([1, 2], np.int64)),
        init('dense/MatMul/ReadVariableOp:0', f(4, 5, scale=0.5)), init('dense/BiasAdd/ReadVariableOp:0', f(5)),
    ]
    n = helper.make_node
    vi = helper.make_tensor_value_info

    def branch(name, body, out, shape):
        return helper.make_graph(body, name, [], [vi(out, F32, shape)])

    # If #1: both branches capture 'relu:0' (outer) and the then-branch an outer initializer.
    then1 = branch('cond_true_12', [n('Mul', ['Relu:0', 'scale/ReadVariableOp:0'], ['cond/mul:0']),
                                    n('Identity', ['cond/mul:0'], ['cond/Identity:0'])],
                   'cond/Identity:0', ['unk__20', 8, 8, 4])
    else1 = branch('cond_false_13', [n('Neg', ['Relu:0'], ['cond/neg:0']),
                                     n('Identity', ['cond/neg:0'], ['cond/Identity_1:0'])],
                   'cond/Identity_1:0', ['unk__21', 8, 8, 4])
    then2 = branch('cond_1_true_30', [n('ReduceMean', ['cond/Identity:0'], ['cond_1/Mean:0'], axes=[1, 2], keepdims=1)],
                   'cond_1/Mean:0', ['unk__22', 1, 1, 4])
    else2 = branch('cond_1_false_31', [n('ReduceMax', ['cond/Identity:0'], ['cond_1/Max:0'], axes=[1, 2], keepdims=1)],
                   'cond_1/Max:0', ['unk__23', 1, 1, 4])
    nodes = [
        n('Transpose', ['input_1:0'], ['conv2d/Conv2D__6:0'], name='conv2d/Conv2D__6', perm=[0, 3, 1, 2]),
        n('Conv', ['conv2d/Conv2D__6:0', 'conv2d/Conv2D/ReadVariableOp:0', 'conv2d/BiasAdd/ReadVariableOp:0'],
          ['conv2d/BiasAdd:0'], name='conv2d/BiasAdd', kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1],
          dilations=[1, 1], group=1),
        n('Transpose', ['conv2d/BiasAdd:0'], ['conv2d/BiasAdd__8:0'], name='conv2d/BiasAdd__8', perm=[0, 2, 3, 1]),
        n('Relu', ['conv2d/BiasAdd__8:0'], ['Relu:0'], name='Relu'),
        # tf.shape(x)[1] == 8
        n('Shape', ['input_1:0'], ['Shape:0'], name='Shape'),
        n('Cast', ['Shape:0'], ['Shape__9:0'], name='Shape__9', to=I32),
        n('Gather', ['Shape__9:0', 'const_fold_opt__7'], ['strided_slice:0'], name='strided_slice', axis=0),
        n('Cast', ['strided_slice:0'], ['strided_slice__10:0'], name='strided_slice__10', to=I64),
        n('Equal', ['strided_slice__10:0', 'const_8:0'], ['Equal:0'], name='Equal'),
        n('If', ['Equal:0'], ['cond/Identity:0'], name='cond', then_branch=then1, else_branch=else1),
        # tf.reduce_mean(x) > threshold
        n('ReduceMean', ['input_1:0'], ['Mean:0'], name='Mean', keepdims=0),
        n('Greater', ['Mean:0', 'threshold:0'], ['Greater:0'], name='Greater'),
        n('If', ['Greater:0'], ['cond_1/Identity:0'], name='cond_1', then_branch=then2, else_branch=else2),
        n('Squeeze', ['cond_1/Identity:0', 'squeeze_axes'], ['Squeeze:0'], name='Squeeze'),
        n('MatMul', ['Squeeze:0', 'dense/MatMul/ReadVariableOp:0'], ['dense/MatMul:0'], name='dense/MatMul'),
        n('Add', ['dense/MatMul:0', 'dense/BiasAdd/ReadVariableOp:0'], ['dense/BiasAdd:0'], name='dense/BiasAdd'),
        n('Identity', ['dense/BiasAdd:0'], ['Identity:0'], name='Identity'),
        n('ArgMax', ['dense/BiasAdd:0'], ['ArgMax:0'], name='ArgMax', axis=1, keepdims=0),
        n('Cast', ['ArgMax:0'], ['Identity_1:0'], name='ArgMax__15', to=I32),
    ]
    graph = helper.make_graph(
        nodes, 'tf2onnx', [vi('input_1:0', F32, ['unk__18', 8, 8, 3]), vi('threshold:0', F32, [])],
        [vi('Identity:0', F32, ['unk__19', 5]), vi('Identity_1:0', I32, ['unk__24'])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='tf2onnx',
                          producer_version='')
    save(m, 'tf2onnx_if', 7)


def lstm():
    """PyTorch (opset 14) of nn.LSTM(8, 16, bidirectional=True) fed (h0, c0) and lengths, then a Linear.

    PyTorch writes W/R/B with ONNX's gate order (it reorders its own ifgo to iofc) and Y as
    [seq, num_directions, batch, hidden]; a bidirectional output becomes Transpose(0,2,1,3) + Reshape
    to [seq, batch, 2*hidden]. Uncertain: PyTorch's exporter passes sequence_lens only in some paths
    (packed sequences); it is a graph input here so that the masking is exercised.
    """
    rng = np.random.default_rng(14)
    f = lambda *s, scale=0.25: (rng.standard_normal(s) * scale).astype(np.float32)
    S, B, I, H = 7, 2, 8, 16
    vi = helper.make_tensor_value_info
    inits = [init('onnx::LSTM_W', f(2, 4 * H, I)), init('onnx::LSTM_R', f(2, 4 * H, H)),
             init('onnx::LSTM_B', f(2, 8 * H)), init('onnx::Reshape_shape', np.array([S, B, 2 * H], np.int64)),
             init('fc.weight_T', f(2 * H, 5)), init('fc.bias', f(5))]
    n = helper.make_node
    nodes = [
        n('LSTM', ['input', 'onnx::LSTM_W', 'onnx::LSTM_R', 'onnx::LSTM_B', 'lengths', 'h0', 'c0'],
          ['/lstm/LSTM_output_0', 'hn', 'cn'], name='/lstm/LSTM', direction='bidirectional', hidden_size=H),
        n('Transpose', ['/lstm/LSTM_output_0'], ['/lstm/Transpose_output_0'], name='/lstm/Transpose', perm=[0, 2, 1, 3]),
        n('Reshape', ['/lstm/Transpose_output_0', 'onnx::Reshape_shape'], ['/lstm/Reshape_output_0'],
          name='/lstm/Reshape'),
        n('MatMul', ['/lstm/Reshape_output_0', 'fc.weight_T'], ['/fc/MatMul_output_0'], name='/fc/MatMul'),
        n('Add', ['fc.bias', '/fc/MatMul_output_0'], ['output'], name='/fc/Add'),
    ]
    graph = helper.make_graph(
        nodes, 'main_graph',
        [vi('input', F32, [S, B, I]), vi('lengths', I32, [B]), vi('h0', F32, [2, B, H]), vi('c0', F32, [2, B, H])],
        [vi('output', F32, [S, B, 5]), vi('hn', F32, [2, B, H]), vi('cn', F32, [2, B, H])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 14)], producer_name='pytorch')
    save(m, 'lstm', 7)


def gru():
    """PyTorch (opset 14) of nn.GRU(8, 16) fed h0, then a Linear: PyTorch writes linear_before_reset=1
    (its GRU applies the reset gate after the recurrent product) and squeezes the direction axis with
    Squeeze-13 (axes as an input)."""
    rng = np.random.default_rng(15)
    f = lambda *s, scale=0.25: (rng.standard_normal(s) * scale).astype(np.float32)
    S, B, I, H = 7, 2, 8, 16
    vi = helper.make_tensor_value_info
    inits = [init('onnx::GRU_W', f(1, 3 * H, I)), init('onnx::GRU_R', f(1, 3 * H, H)),
             init('onnx::GRU_B', f(1, 6 * H)), init('onnx::Squeeze_axes', np.array([1], np.int64)),
             init('fc.weight_T', f(H, 5)), init('fc.bias', f(5))]
    n = helper.make_node
    nodes = [
        n('GRU', ['input', 'onnx::GRU_W', 'onnx::GRU_R', 'onnx::GRU_B', '', 'h0'], ['/gru/GRU_output_0', 'hn'],
          name='/gru/GRU', hidden_size=H, linear_before_reset=1),
        n('Squeeze', ['/gru/GRU_output_0', 'onnx::Squeeze_axes'], ['/gru/Squeeze_output_0'], name='/gru/Squeeze'),
        n('MatMul', ['/gru/Squeeze_output_0', 'fc.weight_T'], ['/fc/MatMul_output_0'], name='/fc/MatMul'),
        n('Add', ['fc.bias', '/fc/MatMul_output_0'], ['output'], name='/fc/Add'),
    ]
    graph = helper.make_graph(nodes, 'main_graph', [vi('input', F32, [S, B, I]), vi('h0', F32, [1, B, H])],
                              [vi('output', F32, [S, B, 5]), vi('hn', F32, [1, B, H])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 14)], producer_name='pytorch')
    save(m, 'gru', 7)


def quantize_weight_u8(w, axis=None):
    """Asymmetric uint8 as onnxruntime.quantization does for weight_type=QUInt8: the range widened to
    include 0, scale = (max - min) / 255, zero point = round(-min / scale)."""
    lo = np.minimum(w.min(axis=axis, keepdims=axis is not None), 0)
    hi = np.maximum(w.max(axis=axis, keepdims=axis is not None), 0)
    scale = ((hi - lo) / 255).astype(np.float32)
    zp = np.clip(np.round(-lo / scale), 0, 255).astype(np.uint8)
    q = np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8)
    return q, scale, zp


def dynamic_quant_matmul():
    """onnxruntime.quantization.quantize_dynamic(weight_type=QUInt8) of MatMul + Add(bias) + Relu.

    The quantizer writes DynamicQuantizeLinear on the activation, MatMulInteger with the uint8 weight
    initializer and its zero point, Cast to float, Mul of the two scales, Mul by it, and keeps the
    bias Add as it was. Its node and value names are copied ('<name>_quantized', '_scale',
    '_zero_point', 'MatMul_quant', ...). Test addition: the activation's quantized value, scale and
    zero point are also graph outputs, so that the test can tell a tie rounded the other way.
    """
    rng = np.random.default_rng(21)
    w = (rng.standard_normal((16, 32)) * 0.2).astype(np.float32)
    wq, ws, wzp = quantize_weight_u8(w)
    vi = helper.make_tensor_value_info
    inits = [init('W_quantized', wq), init('W_scale', ws.reshape(())), init('W_zero_point', wzp.reshape(())),
             init('bias', (rng.standard_normal(32) * 0.1).astype(np.float32))]
    n = helper.make_node
    nodes = [
        n('DynamicQuantizeLinear', ['input'], ['input_quantized', 'input_scale', 'input_zero_point'],
          name='input_QuantizeLinear'),
        n('MatMulInteger', ['input_quantized', 'W_quantized', 'input_zero_point', 'W_zero_point'],
          ['MatMul_output_0_output_quantized'], name='MatMul_quant'),
        n('Cast', ['MatMul_output_0_output_quantized'], ['MatMul_output_0_output_quantized_cast_output'],
          name='MatMul_output_0_output_quantized_cast', to=F32),
        n('Mul', ['input_scale', 'W_scale'], ['MatMul_quant_scales_mul:0'], name='MatMul_quant_scales_mul'),
        n('Mul', ['MatMul_output_0_output_quantized_cast_output', 'MatMul_quant_scales_mul:0'], ['MatMul_output_0'],
          name='MatMul_quant_output_scale_mul'),
        n('Add', ['MatMul_output_0', 'bias'], ['Add_output_0'], name='Add'),
        n('Relu', ['Add_output_0'], ['output'], name='Relu'),
    ]
    graph = helper.make_graph(
        nodes, 'main_graph', [vi('input', F32, ['batch', 4, 16])],
        [vi('output', F32, ['batch', 4, 32]), vi('input_quantized', U8, ['batch', 4, 16]),
         vi('input_scale', F32, []), vi('input_zero_point', U8, [])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='onnx.quantize')
    save(m, 'dynamic_quant_matmul_uint8', 7)


def dynamic_quant_conv():
    """quantize_dynamic(weight_type=QUInt8) of Conv(bias) + Relu: ConvInteger, Cast, the scales' Mul,
    then the bias added back as an Add of it reshaped to [1, C, 1, 1] (the quantizer's form for a
    ConvInteger; uncertain whether it writes a Reshape node or a reshaped initializer: an initializer
    here). The activation's quantization is exposed as in the MatMul model."""
    rng = np.random.default_rng(22)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    wq, ws, wzp = quantize_weight_u8(w)
    vi = helper.make_tensor_value_info
    inits = [init('W_quantized', wq), init('W_scale', ws.reshape(())), init('W_zero_point', wzp.reshape(())),
             init('B_reshaped', (rng.standard_normal((1, 4, 1, 1)) * 0.1).astype(np.float32))]
    n = helper.make_node
    nodes = [
        n('DynamicQuantizeLinear', ['input'], ['input_quantized', 'input_scale', 'input_zero_point'],
          name='input_QuantizeLinear'),
        n('ConvInteger', ['input_quantized', 'W_quantized', 'input_zero_point', 'W_zero_point'],
          ['conv_output_quantized'], name='Conv_quant', kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        n('Cast', ['conv_output_quantized'], ['conv_output_quantized_cast_output'], name='conv_cast', to=F32),
        n('Mul', ['input_scale', 'W_scale'], ['Conv_quant_scales_mul:0'], name='Conv_quant_scales_mul'),
        n('Mul', ['conv_output_quantized_cast_output', 'Conv_quant_scales_mul:0'], ['conv_output_scaled'],
          name='Conv_quant_output_scale_mul'),
        n('Add', ['conv_output_scaled', 'B_reshaped'], ['conv_output'], name='Conv_bias_add'),
        n('Relu', ['conv_output'], ['output'], name='Relu'),
    ]
    graph = helper.make_graph(
        nodes, 'main_graph', [vi('input', F32, ['batch', 3, 8, 8])],
        [vi('output', F32, ['batch', 4, 8, 8]), vi('input_quantized', U8, ['batch', 3, 8, 8]),
         vi('input_scale', F32, []), vi('input_zero_point', U8, [])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)], producer_name='onnx.quantize')
    save(m, 'dynamic_quant_conv_uint8', 7)


def fp16_block():
    """A pre-LN transformer block entirely in float16 (opset 17), as onnxconverter_common's
    convert_float_to_float16 leaves a PyTorch export (keep_io_types=False): fp16 weights, inputs and
    outputs. LayerNormalization-17 for the first norm; the second as the decomposition older exports
    write (ReduceMean, Sub, Pow, Add eps, Sqrt, Div, Mul, Add); Gelu as its Erf form; attention with
    Reshape/Transpose heads and a scalar scale Mul before Softmax."""
    rng = np.random.default_rng(17)
    B, S, D, NH, HD, FF = 2, 8, 32, 4, 8, 64
    h = lambda *s, scale=0.15: (rng.standard_normal(s) * scale).astype(np.float16)
    c16 = lambda v: np.array(v, np.float16)
    vi = helper.make_tensor_value_info
    inits = [
        init('ln1.weight', (1 + h(D, scale=0.1)).astype(np.float16)), init('ln1.bias', h(D, scale=0.1)),
        init('q.weight', h(D, D)), init('q.bias', h(D, scale=0.05)),
        init('k.weight', h(D, D)), init('k.bias', h(D, scale=0.05)),
        init('v.weight', h(D, D)), init('v.bias', h(D, scale=0.05)),
        init('o.weight', h(D, D)), init('o.bias', h(D, scale=0.05)),
        init('ln2.weight', (1 + h(D, scale=0.1)).astype(np.float16)), init('ln2.bias', h(D, scale=0.1)),
        init('fc1.weight', h(D, FF)), init('fc1.bias', h(FF, scale=0.05)),
        init('fc2.weight', h(FF, D)), init('fc2.bias', h(D, scale=0.05)),
        init('heads_shape', np.array([0, 0, NH, HD], np.int64)), init('merge_shape', np.array([0, 0, D], np.int64)),
        init('attn_scale', c16(1 / np.sqrt(HD))), init('two', c16(2)), init('eps', c16(1e-5)),
        init('half', c16(0.5)), init('one', c16(1)), init('sqrt2', c16(np.sqrt(2))),
    ]
    n = helper.make_node
    nodes = [n('LayerNormalization', ['x', 'ln1.weight', 'ln1.bias'], ['ln1'], name='ln1', axis=-1, epsilon=1e-5)]
    for p in 'qkv':
        perm = [0, 2, 3, 1] if p == 'k' else [0, 2, 1, 3]  # K comes out transposed for Q @ K^T
        nodes += [n('MatMul', ['ln1', f'{p}.weight'], [f'{p}_mm'], name=f'{p}_mm'),
                  n('Add', [f'{p}_mm', f'{p}.bias'], [f'{p}_lin'], name=f'{p}_add'),
                  n('Reshape', [f'{p}_lin', 'heads_shape'], [f'{p}_heads'], name=f'{p}_reshape'),
                  n('Transpose', [f'{p}_heads'], [f'{p}_t'], name=f'{p}_transpose', perm=perm)]
    nodes += [
        n('MatMul', ['q_t', 'k_t'], ['scores'], name='qk'),
        n('Mul', ['scores', 'attn_scale'], ['scores_scaled'], name='scale'),
        n('Softmax', ['scores_scaled'], ['probs'], name='softmax', axis=-1),
        n('MatMul', ['probs', 'v_t'], ['ctx'], name='pv'),
        n('Transpose', ['ctx'], ['ctx_t'], name='ctx_transpose', perm=[0, 2, 1, 3]),
        n('Reshape', ['ctx_t', 'merge_shape'], ['ctx_merged'], name='ctx_reshape'),
        n('MatMul', ['ctx_merged', 'o.weight'], ['o_mm'], name='o_mm'),
        n('Add', ['o_mm', 'o.bias'], ['o_lin'], name='o_add'),
        n('Add', ['x', 'o_lin'], ['res1'], name='residual1'),
        # LayerNorm, decomposed
        n('ReduceMean', ['res1'], ['mu'], name='ln2_mean', axes=[-1], keepdims=1),
        n('Sub', ['res1', 'mu'], ['centered'], name='ln2_sub'),
        n('Pow', ['centered', 'two'], ['sq'], name='ln2_pow'),
        n('ReduceMean', ['sq'], ['var'], name='ln2_var', axes=[-1], keepdims=1),
        n('Add', ['var', 'eps'], ['var_eps'], name='ln2_add_eps'),
        n('Sqrt', ['var_eps'], ['std'], name='ln2_sqrt'),
        n('Div', ['centered', 'std'], ['normed'], name='ln2_div'),
        n('Mul', ['normed', 'ln2.weight'], ['ln2_scaled'], name='ln2_mul'),
        n('Add', ['ln2_scaled', 'ln2.bias'], ['ln2'], name='ln2_add'),
        n('MatMul', ['ln2', 'fc1.weight'], ['fc1_mm'], name='fc1_mm'),
        n('Add', ['fc1_mm', 'fc1.bias'], ['fc1'], name='fc1_add'),
        # Gelu: x * 0.5 * (1 + erf(x / sqrt(2)))
        n('Div', ['fc1', 'sqrt2'], ['gelu_div'], name='gelu_div'),
        n('Erf', ['gelu_div'], ['gelu_erf'], name='gelu_erf'),
        n('Add', ['gelu_erf', 'one'], ['gelu_add'], name='gelu_add'),
        n('Mul', ['fc1', 'gelu_add'], ['gelu_mul'], name='gelu_mul'),
        n('Mul', ['gelu_mul', 'half'], ['gelu'], name='gelu_half'),
        n('MatMul', ['gelu', 'fc2.weight'], ['fc2_mm'], name='fc2_mm'),
        n('Add', ['fc2_mm', 'fc2.bias'], ['fc2'], name='fc2_add'),
        n('Add', ['res1', 'fc2'], ['y'], name='residual2'),
    ]
    graph = helper.make_graph(nodes, 'fp16_block', [vi('x', F16, [B, S, D])], [vi('y', F16, [B, S, D])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)], producer_name='pytorch')
    save(m, 'fp16_block', 8)


if __name__ == '__main__':
    os.makedirs(OUT, exist_ok=True)
    paddle_opset9()
    tf2onnx_if()
    lstm()
    gru()
    dynamic_quant_matmul()
    dynamic_quant_conv()
    fp16_block()
