// Which versions of each operator kiln reads, and the adapter of every version step: a row per
// version, in order, the first row of an operator being the oldest version read. A node of an older
// version goes through each later row's adapter in turn (nullptr: the form did not change, the note
// says what did), so every kernel knows one form, the newest. A version with no row is an
// UnsupportedError naming the operator and the version.
#include <fmt/format.h>

#include <string_view>

#include "onnx/graph_reader.h"
#include "onnx/legacy_rewrites.h"
#include "onnx/op_versions.h"
#include "onnx/version_adapters.h"
#include "support/error.h"

namespace kiln {
namespace {

using namespace legacy;

constexpr VersionStep kSteps[] = {
    // Elementwise unary
    {"Abs", 6, nullptr, "oldest read"}, {"Abs", 13, nullptr, "bf16"},
    {"Neg", 6, nullptr, "oldest read"}, {"Neg", 13, nullptr, "bf16"},
    {"Asin", 7, nullptr, "oldest read"}, {"Asin", 22, nullptr, "bf16"},
    {"Acos", 7, nullptr, "oldest read"}, {"Acos", 22, nullptr, "bf16"},
    {"Atan", 7, nullptr, "oldest read"}, {"Atan", 22, nullptr, "bf16"},
    {"Sqrt", 6, nullptr, "oldest read"}, {"Sqrt", 13, nullptr, "bf16"},
    {"Reciprocal", 6, nullptr, "oldest read"}, {"Reciprocal", 13, nullptr, "bf16"},
    {"Exp", 6, nullptr, "oldest read"}, {"Exp", 13, nullptr, "bf16"},
    {"Log", 6, nullptr, "oldest read"}, {"Log", 13, nullptr, "bf16"},
    {"Erf", 9, nullptr, "oldest read"}, {"Erf", 13, nullptr, "bf16"},
    {"Tanh", 6, nullptr, "oldest read"}, {"Tanh", 13, nullptr, "bf16"},
    {"Sigmoid", 6, nullptr, "oldest read"}, {"Sigmoid", 13, nullptr, "bf16"},
    {"Relu", 6, nullptr, "oldest read"}, {"Relu", 13, nullptr, "bf16"}, {"Relu", 14, nullptr, "integer types"},
    {"LeakyRelu", 6, nullptr, "oldest read"}, {"LeakyRelu", 16, nullptr, "bf16"},
    {"HardSigmoid", 6, nullptr, "oldest read"}, {"HardSigmoid", 22, nullptr, "bf16"},
    {"HardSwish", 14, nullptr, "oldest read"}, {"HardSwish", 22, nullptr, "bf16"},
    {"Clip", 6, nullptr, "oldest read"}, {"Clip", 11, clip_attrs_to_inputs, "min and max become inputs"},
    {"Clip", 12, nullptr, "integer types"}, {"Clip", 13, nullptr, "bf16"},
    {"Not", 1, nullptr, "the only version"},
    {"IsNaN", 9, nullptr, "oldest read"}, {"IsNaN", 13, nullptr, "bf16"}, {"IsNaN", 20, nullptr, "float8 types"},
    {"IsInf", 10, nullptr, "oldest read"}, {"IsInf", 20, nullptr, "more float types"},
    {"Cast", 6, nullptr, "oldest read ('to' an element type code)"}, {"Cast", 9, nullptr, "string types"},
    {"Cast", 13, nullptr, "bf16"}, {"Cast", 19, nullptr, "float8 types, 'saturate' (float8 only)"},
    {"Cast", 21, nullptr, "4-bit types"}, {"Cast", 23, nullptr, "float4"}, {"Cast", 24, nullptr, "float8e8m0"},
    {"Cast", 25, nullptr, "2-bit types"},
    {"CastLike", 15, nullptr, "oldest read"}, {"CastLike", 19, nullptr, "float8 types"},
    {"CastLike", 21, nullptr, "4-bit types"}, {"CastLike", 23, nullptr, "float4"},
    {"CastLike", 24, nullptr, "float8e8m0"}, {"CastLike", 25, nullptr, "2-bit types"},
    {"Identity", 1, nullptr, "oldest read"}, {"Identity", 13, nullptr, "bf16"}, {"Identity", 14, nullptr, "sequences"},
    {"Identity", 16, nullptr, "optionals"}, {"Identity", 19, nullptr, "float8 types"},
    {"Identity", 21, nullptr, "4-bit types"}, {"Identity", 23, nullptr, "float4"},
    {"Identity", 24, nullptr, "float8e8m0"}, {"Identity", 25, nullptr, "2-bit types"},
    {"Floor", 6, nullptr, "oldest read"}, {"Floor", 13, nullptr, "bf16"},
    {"Ceil", 6, nullptr, "oldest read"}, {"Ceil", 13, nullptr, "bf16"},
    {"Sin", 7, nullptr, "oldest read"}, {"Sin", 22, nullptr, "bf16"},
    {"Cos", 7, nullptr, "oldest read"}, {"Cos", 22, nullptr, "bf16"},
    {"Softplus", 1, nullptr, "oldest read"}, {"Softplus", 22, nullptr, "bf16"},
    {"Elu", 6, nullptr, "oldest read"}, {"Elu", 22, nullptr, "bf16"},
    // Elementwise binary / variadic (from 7 with multidirectional broadcasting; 6's same-shape
    // variadic ops are a case of it)
    {"Add", 7, nullptr, "oldest read"}, {"Add", 13, nullptr, "bf16"}, {"Add", 14, nullptr, "8- and 16-bit integers"},
    {"Sub", 7, nullptr, "oldest read"}, {"Sub", 13, nullptr, "bf16"}, {"Sub", 14, nullptr, "8- and 16-bit integers"},
    {"Mul", 7, nullptr, "oldest read"}, {"Mul", 13, nullptr, "bf16"}, {"Mul", 14, nullptr, "8- and 16-bit integers"},
    {"Div", 7, nullptr, "oldest read"}, {"Div", 13, nullptr, "bf16"}, {"Div", 14, nullptr, "8- and 16-bit integers"},
    {"Pow", 7, nullptr, "oldest read"}, {"Pow", 12, nullptr, "integer types"}, {"Pow", 13, nullptr, "bf16"},
    {"Pow", 15, nullptr, "bf16 exponents"},
    {"Min", 6, nullptr, "oldest read (inputs of one shape)"}, {"Min", 8, nullptr, "broadcasting"},
    {"Min", 12, nullptr, "integer types"}, {"Min", 13, nullptr, "bf16"},
    {"Max", 6, nullptr, "oldest read (inputs of one shape)"}, {"Max", 8, nullptr, "broadcasting"},
    {"Max", 12, nullptr, "integer types"}, {"Max", 13, nullptr, "bf16"},
    {"Sum", 6, nullptr, "oldest read (inputs of one shape)"}, {"Sum", 8, nullptr, "broadcasting"},
    {"Sum", 13, nullptr, "bf16"},
    {"Mean", 6, nullptr, "oldest read (inputs of one shape)"}, {"Mean", 8, nullptr, "broadcasting"},
    {"Mean", 13, nullptr, "bf16"},
    {"Mod", 10, nullptr, "oldest read"}, {"Mod", 13, nullptr, "bf16"},
    {"Equal", 7, nullptr, "oldest read"}, {"Equal", 11, nullptr, "float types"}, {"Equal", 13, nullptr, "bf16"},
    {"Equal", 19, nullptr, "strings"},
    {"Less", 7, nullptr, "oldest read"}, {"Less", 9, nullptr, "more types"}, {"Less", 13, nullptr, "bf16"},
    {"Greater", 7, nullptr, "oldest read"}, {"Greater", 9, nullptr, "more types"}, {"Greater", 13, nullptr, "bf16"},
    {"LessOrEqual", 12, nullptr, "oldest read"}, {"LessOrEqual", 16, nullptr, "bf16"},
    {"GreaterOrEqual", 12, nullptr, "oldest read"}, {"GreaterOrEqual", 16, nullptr, "bf16"},
    {"And", 7, nullptr, "oldest read"}, {"Or", 7, nullptr, "oldest read"}, {"Xor", 7, nullptr, "oldest read"},
    {"Where", 9, nullptr, "oldest read"}, {"Where", 16, nullptr, "bf16"},
    // Normalisation and reductions
    {"Softmax", 1, nullptr, "oldest read"}, {"Softmax", 11, nullptr, "negative axis"},
    {"Softmax", 13, softmax_single_axis, "normalises over one axis, default -1"},
    {"LogSoftmax", 1, nullptr, "oldest read"}, {"LogSoftmax", 11, nullptr, "negative axis"},
    {"LogSoftmax", 13, softmax_single_axis, "normalises over one axis, default -1"},
    {"LayerNormalization", 17, nullptr, "the only version"},
    {"ReduceMean", 1, nullptr, "oldest read"}, {"ReduceMean", 11, nullptr, "negative axes"},
    {"ReduceMean", 13, nullptr, "bf16"}, {"ReduceMean", 18, axes_to_input, "axes become an input"},
    {"ReduceSum", 1, nullptr, "oldest read"}, {"ReduceSum", 11, nullptr, "negative axes"},
    {"ReduceSum", 13, axes_to_input, "axes become an input"},
    {"ReduceMax", 1, nullptr, "oldest read"}, {"ReduceMax", 11, nullptr, "negative axes"},
    {"ReduceMax", 12, nullptr, "8-bit integers"}, {"ReduceMax", 13, nullptr, "bf16"},
    {"ReduceMax", 18, axes_to_input, "axes become an input"}, {"ReduceMax", 20, nullptr, "bool"},
    {"ReduceMin", 1, nullptr, "oldest read"}, {"ReduceMin", 11, nullptr, "negative axes"},
    {"ReduceMin", 12, nullptr, "8-bit integers"}, {"ReduceMin", 13, nullptr, "bf16"},
    {"ReduceMin", 18, axes_to_input, "axes become an input"}, {"ReduceMin", 20, nullptr, "bool"},
    {"ReduceProd", 1, nullptr, "oldest read"}, {"ReduceProd", 11, nullptr, "negative axes"},
    {"ReduceProd", 13, nullptr, "bf16"}, {"ReduceProd", 18, axes_to_input, "axes become an input"},
    {"ArgMax", 1, nullptr, "oldest read"}, {"ArgMax", 11, nullptr, "negative axis"},
    {"ArgMax", 12, nullptr, "select_last_index"}, {"ArgMax", 13, nullptr, "bf16"},
    {"ArgMin", 1, nullptr, "oldest read"}, {"ArgMin", 11, nullptr, "negative axis"},
    {"ArgMin", 12, nullptr, "select_last_index"}, {"ArgMin", 13, nullptr, "bf16"},
    // Linear algebra and NN
    {"MatMul", 1, nullptr, "oldest read"}, {"MatMul", 9, nullptr, "integer types"}, {"MatMul", 13, nullptr, "bf16"},
    {"Gemm", 7, nullptr, "oldest read (C broadcasts)"}, {"Gemm", 9, nullptr, "integer types"},
    {"Gemm", 11, nullptr, "C is optional"}, {"Gemm", 13, nullptr, "bf16"},
    {"Conv", 1, nullptr, "oldest read"}, {"Conv", 11, nullptr, "auto_pad made precise"}, {"Conv", 22, nullptr, "bf16"},
    {"ConvTranspose", 1, nullptr, "oldest read"}, {"ConvTranspose", 11, nullptr, "auto_pad made precise"},
    {"ConvTranspose", 22, nullptr, "bf16"},
    {"BatchNormalization", 7, nullptr, "oldest read"},
    {"BatchNormalization", 9, batchnorm_no_spatial, "'spatial' removed (always 1)"},
    {"BatchNormalization", 14, batchnorm_inference, "training_mode; the optional outputs change meaning"},
    {"BatchNormalization", 15, nullptr, "separate types for scale and statistics"},
    {"MaxPool", 1, nullptr, "oldest read"}, {"MaxPool", 8, nullptr, "Indices output, storage_order"},
    {"MaxPool", 10, nullptr, "ceil_mode, dilations"}, {"MaxPool", 11, nullptr, "auto_pad made precise"},
    {"MaxPool", 12, nullptr, "8-bit integers"}, {"MaxPool", 22, nullptr, "bf16"},
    {"AveragePool", 7, nullptr, "oldest read"}, {"AveragePool", 10, nullptr, "ceil_mode"},
    {"AveragePool", 11, nullptr, "auto_pad made precise"}, {"AveragePool", 19, nullptr, "dilations"},
    {"AveragePool", 22, nullptr, "bf16"},
    {"GlobalAveragePool", 1, nullptr, "oldest read"}, {"GlobalAveragePool", 22, nullptr, "bf16"},
    {"Resize", 10, nullptr, "oldest read"}, {"Resize", 11, resize_roi_input, "roi, sizes, coordinate modes"},
    {"Resize", 13, nullptr, "roi and scales optional"},
    {"Resize", 18, nullptr, "antialias, axes, keep_aspect_ratio_policy"},
    {"Resize", 19, nullptr, "half_pixel_symmetric"},
    // Shape and data movement
    {"Reshape", 5, nullptr, "oldest read (shape an input)"}, {"Reshape", 13, nullptr, "bf16"},
    {"Reshape", 14, nullptr, "allowzero"}, {"Reshape", 19, nullptr, "float8 types"},
    {"Reshape", 21, nullptr, "4-bit types"}, {"Reshape", 23, nullptr, "float4"},
    {"Reshape", 24, nullptr, "float8e8m0"}, {"Reshape", 25, nullptr, "2-bit types"},
    {"Transpose", 1, nullptr, "oldest read"}, {"Transpose", 13, nullptr, "bf16"},
    {"Transpose", 21, nullptr, "4-bit types"}, {"Transpose", 23, nullptr, "float4"},
    {"Transpose", 24, nullptr, "float8e8m0"}, {"Transpose", 25, nullptr, "2-bit types"},
    {"Unsqueeze", 1, nullptr, "oldest read"}, {"Unsqueeze", 11, nullptr, "negative axes"},
    {"Unsqueeze", 13, axes_to_input, "axes become an input"}, {"Unsqueeze", 21, nullptr, "4-bit types"},
    {"Unsqueeze", 23, nullptr, "float4"}, {"Unsqueeze", 24, nullptr, "float8e8m0"},
    {"Unsqueeze", 25, nullptr, "2-bit types"},
    {"Squeeze", 1, nullptr, "oldest read"}, {"Squeeze", 11, nullptr, "negative axes"},
    {"Squeeze", 13, axes_to_input, "axes become an input"}, {"Squeeze", 21, nullptr, "4-bit types"},
    {"Squeeze", 23, nullptr, "float4"}, {"Squeeze", 24, nullptr, "float8e8m0"},
    {"Squeeze", 25, nullptr, "2-bit types"},
    {"Concat", 4, nullptr, "oldest read"}, {"Concat", 11, nullptr, "negative axis"}, {"Concat", 13, nullptr, "bf16"},
    {"Slice", 1, nullptr, "oldest read"}, {"Slice", 10, slice_attrs_to_inputs, "starts, ends, axes become inputs; steps"},
    {"Slice", 11, nullptr, "negative axes"}, {"Slice", 13, nullptr, "bf16"},
    {"Split", 2, nullptr, "oldest read"}, {"Split", 11, nullptr, "negative axis"},
    {"Split", 13, split_to_input, "split becomes an input"},
    {"Split", 18, split_num_outputs, "num_outputs"},
    {"Gather", 1, nullptr, "oldest read"}, {"Gather", 11, nullptr, "negative indices"}, {"Gather", 13, nullptr, "bf16"},
    {"GatherElements", 11, nullptr, "oldest read"}, {"GatherElements", 13, nullptr, "bf16"},
    {"Expand", 8, nullptr, "oldest read"}, {"Expand", 13, nullptr, "bf16"},
    {"Shape", 1, nullptr, "oldest read"}, {"Shape", 13, nullptr, "bf16"}, {"Shape", 15, nullptr, "start, end"},
    {"Shape", 19, nullptr, "float8 types"}, {"Shape", 21, nullptr, "4-bit types"}, {"Shape", 23, nullptr, "float4"},
    {"Shape", 24, nullptr, "float8e8m0"}, {"Shape", 25, nullptr, "2-bit types"},
    {"Size", 1, nullptr, "oldest read"}, {"Size", 13, nullptr, "bf16"}, {"Size", 19, nullptr, "float8 types"},
    {"Size", 21, nullptr, "4-bit types"}, {"Size", 23, nullptr, "float4"}, {"Size", 24, nullptr, "float8e8m0"},
    {"Size", 25, nullptr, "2-bit types"},
    {"Constant", 1, nullptr, "oldest read"}, {"Constant", 9, nullptr, "more types"},
    {"Constant", 11, nullptr, "sparse_value"}, {"Constant", 12, nullptr, "value_float(s), value_int(s), ..."},
    {"Constant", 13, nullptr, "bf16"}, {"Constant", 19, nullptr, "float8 types"},
    {"Constant", 21, nullptr, "4-bit types"}, {"Constant", 23, nullptr, "float4"},
    {"Constant", 24, nullptr, "float8e8m0"}, {"Constant", 25, nullptr, "2-bit types"},
    {"ConstantOfShape", 9, nullptr, "oldest read"}, {"ConstantOfShape", 20, nullptr, "bf16, float8 types"},
    {"ConstantOfShape", 21, nullptr, "4-bit types"}, {"ConstantOfShape", 23, nullptr, "float4"},
    {"ConstantOfShape", 24, nullptr, "float8e8m0"}, {"ConstantOfShape", 25, nullptr, "2-bit types"},
    {"Range", 11, nullptr, "oldest read"}, {"Range", 27, nullptr, "half types, stash_type"},
    {"Flatten", 1, nullptr, "oldest read"}, {"Flatten", 9, nullptr, "more types"},
    {"Flatten", 11, nullptr, "negative axis"}, {"Flatten", 13, nullptr, "bf16"},
    {"Flatten", 21, nullptr, "4-bit types"}, {"Flatten", 23, nullptr, "float4"},
    {"Flatten", 24, nullptr, "float8e8m0"}, {"Flatten", 25, nullptr, "2-bit types"},
    {"Trilu", 14, nullptr, "the only version"},
    {"CumSum", 11, nullptr, "oldest read"}, {"CumSum", 14, nullptr, "bf16 and f16"},
    {"CumProd", 26, nullptr, "the only version"},
    {"Unique", 11, nullptr, "the only version"},
    {"NonMaxSuppression", 10, nullptr, "oldest read"}, {"NonMaxSuppression", 11, nullptr, "no change of meaning"},
    {"Det", 11, nullptr, "oldest read"}, {"Det", 22, nullptr, "bf16"},
    {"GridSample", 16, nullptr, "oldest read"}, {"GridSample", 20, grid_sample_mode_names, "modes renamed, N-D"},
    {"GridSample", 22, nullptr, "bf16"},
    {"STFT", 17, nullptr, "the only version"}, {"MelWeightMatrix", 17, nullptr, "the only version"},
    {"RoiAlign", 10, nullptr, "oldest read"}, {"RoiAlign", 16, roi_align_output_half_pixel, "coordinate_transformation_mode"},
    {"RoiAlign", 22, nullptr, "bf16"},
    {"TfIdfVectorizer", 9, nullptr, "the only version"},
    {"If", 1, nullptr, "oldest read"}, {"If", 11, nullptr, "branch outputs may differ in shape"},
    {"If", 13, nullptr, "sequence outputs"}, {"If", 16, nullptr, "optional outputs"}, {"If", 19, nullptr, "float8 types"},
    {"If", 21, nullptr, "4-bit types"}, {"If", 23, nullptr, "float4"}, {"If", 24, nullptr, "float8e8m0"},
    {"If", 25, nullptr, "2-bit types"},
    {"Loop", 1, nullptr, "oldest read"}, {"Loop", 11, nullptr, "carried values may change shape"},
    {"Loop", 13, nullptr, "sequence values"}, {"Loop", 16, nullptr, "optional values"}, {"Loop", 19, nullptr, "float8 types"},
    {"Loop", 21, nullptr, "4-bit types"}, {"Loop", 23, nullptr, "float4"}, {"Loop", 24, nullptr, "float8e8m0"},
    {"Loop", 25, nullptr, "2-bit types"},
    {"Scan", 8, nullptr, "oldest read"}, {"Scan", 9, scan_batch_major, "no batch axis; axes and directions of inputs and outputs"},
    {"Scan", 11, nullptr, "negative axes"}, {"Scan", 16, nullptr, "bf16"}, {"Scan", 19, nullptr, "float8 types"},
    {"Scan", 21, nullptr, "4-bit types"}, {"Scan", 23, nullptr, "float4"}, {"Scan", 24, nullptr, "float8e8m0"},
    {"Scan", 25, nullptr, "2-bit types"},
    {"TopK", 1, nullptr, "oldest read"}, {"TopK", 10, topk_k_to_input, "k becomes input K"}, {"TopK", 11, nullptr, "negative axis, largest, sorted"},
    {"TopK", 24, nullptr, "bf16"},
    {"GatherND", 11, nullptr, "oldest read"}, {"GatherND", 12, nullptr, "batch_dims"}, {"GatherND", 13, nullptr, "bf16"},
    {"Compress", 9, nullptr, "oldest read"}, {"Compress", 11, nullptr, "negative axis"},
    {"NonZero", 9, nullptr, "oldest read"}, {"NonZero", 13, nullptr, "bf16"},
    {"ReverseSequence", 10, nullptr, "the only version"},
    {"BitShift", 11, nullptr, "the only version"},
    {"BitwiseAnd", 18, nullptr, "the only version"}, {"BitwiseOr", 18, nullptr, "the only version"},
    {"BitwiseXor", 18, nullptr, "the only version"}, {"BitwiseNot", 18, nullptr, "the only version"},
    {"HannWindow", 17, nullptr, "the only version"}, {"HammingWindow", 17, nullptr, "the only version"},
    {"BlackmanWindow", 17, nullptr, "the only version"},
    {"Scatter", 9, nullptr, "the only version (read as ScatterElements)"},
    {"ScatterElements", 11, nullptr, "oldest read"}, {"ScatterElements", 13, nullptr, "bf16"},
    {"ScatterElements", 16, nullptr, "reduction add and mul"}, {"ScatterElements", 18, nullptr, "reduction max and min"},
    {"ScatterND", 11, nullptr, "oldest read"}, {"ScatterND", 13, nullptr, "bf16"},
    {"ScatterND", 16, nullptr, "reduction add and mul"}, {"ScatterND", 18, nullptr, "reduction max and min"},
    {"Tile", 6, nullptr, "oldest read"}, {"Tile", 13, nullptr, "bf16"},
    {"Pad", 2, nullptr, "oldest read"}, {"Pad", 11, pad_attrs_to_inputs, "pads and value become inputs"},
    {"Pad", 13, nullptr, "bf16"}, {"Pad", 18, nullptr, "axes"}, {"Pad", 19, nullptr, "wrap mode"},
    {"Pad", 21, nullptr, "4-bit types"}, {"Pad", 23, nullptr, "float4"}, {"Pad", 24, nullptr, "float8e8m0"},
    {"Pad", 25, nullptr, "2-bit types"},
    // ONNX operators kiln reads as others (import_rewrites.cpp)
    {"Upsample", 7, nullptr, "oldest read"}, {"Upsample", 9, upsample_scales_input, "scales become an input"},
    {"Dropout", 7, nullptr, "oldest read"}, {"Dropout", 10, dropout_bool_mask, "the mask is bool"},
    {"Dropout", 12, dropout_ratio_input, "ratio and training_mode inputs"}, {"Dropout", 13, nullptr, "bf16"},
    {"Dropout", 22, nullptr, "bf16 ratio"},
    {"ReduceL1", 1, nullptr, "oldest read"}, {"ReduceL1", 11, nullptr, "negative axes"},
    {"ReduceL1", 13, nullptr, "bf16"}, {"ReduceL1", 18, axes_to_input, "axes become an input"},
    {"ReduceL2", 1, nullptr, "oldest read"}, {"ReduceL2", 11, nullptr, "negative axes"},
    {"ReduceL2", 13, nullptr, "bf16"}, {"ReduceL2", 18, axes_to_input, "axes become an input"},
    {"ReduceLogSum", 1, nullptr, "oldest read"}, {"ReduceLogSum", 11, nullptr, "negative axes"},
    {"ReduceLogSum", 13, nullptr, "bf16"}, {"ReduceLogSum", 18, axes_to_input, "axes become an input"},
    {"ReduceLogSumExp", 1, nullptr, "oldest read"}, {"ReduceLogSumExp", 11, nullptr, "negative axes"},
    {"ReduceLogSumExp", 13, nullptr, "bf16"}, {"ReduceLogSumExp", 18, axes_to_input, "axes become an input"},
    {"ReduceSumSquare", 1, nullptr, "oldest read"}, {"ReduceSumSquare", 11, nullptr, "negative axes"},
    {"ReduceSumSquare", 13, nullptr, "bf16"}, {"ReduceSumSquare", 18, axes_to_input, "axes become an input"},
    {"RMSNormalization", 23, nullptr, "the only version"},
    {"Attention", 23, nullptr, "oldest read"}, {"Attention", 24, nullptr, "nonpad_kv_seqlen input"},
    {"Attention", 25, nullptr, "left / right window sizes"},
    {"InstanceNormalization", 6, nullptr, "oldest read"}, {"InstanceNormalization", 22, nullptr, "bf16"},
    {"GroupNormalization", 21, nullptr, "scale and bias per channel (18's per group is not read)"},
    {"LRN", 1, nullptr, "oldest read"}, {"LRN", 13, nullptr, "bf16"},
    {"MaxUnpool", 11, nullptr, "oldest read (9 is not)"}, {"MaxUnpool", 22, nullptr, "bf16"},
    {"SwiGLU", 28, nullptr, "the only version"},
    {"AffineGrid", 20, nullptr, "the only version"},
    {"DFT", 17, nullptr, "oldest read"}, {"DFT", 20, dft_axis_to_input, "axis an input (read where it is a constant)"},
    {"DepthToSpace", 1, nullptr, "oldest read (DCR)"}, {"DepthToSpace", 11, nullptr, "mode (CRD)"},
    {"DepthToSpace", 13, nullptr, "bf16"},
    {"SpaceToDepth", 1, nullptr, "oldest read"}, {"SpaceToDepth", 13, nullptr, "bf16"},
    {"OneHot", 9, nullptr, "oldest read"}, {"OneHot", 11, nullptr, "negative indices count from depth"},
    {"DequantizeLinear", 10, nullptr, "oldest read"}, {"DequantizeLinear", 13, nullptr, "axis"},
    {"DequantizeLinear", 19, nullptr, "f16 / bf16 scales"}, {"DequantizeLinear", 21, nullptr, "block_size (refused)"},
    {"DequantizeLinear", 23, nullptr, "output_dtype"}, {"DequantizeLinear", 24, nullptr, "more types"},
    {"DequantizeLinear", 25, nullptr, "more types"},
    {"QuantizeLinear", 10, nullptr, "oldest read"}, {"QuantizeLinear", 13, nullptr, "axis"},
    {"QuantizeLinear", 19, nullptr, "saturate, f16 / bf16"}, {"QuantizeLinear", 21, nullptr, "block_size (refused), output_dtype"},
    {"QuantizeLinear", 23, nullptr, "precision (refused)"}, {"QuantizeLinear", 24, nullptr, "more types"},
    {"QuantizeLinear", 25, nullptr, "more types"},
    {"MatMulInteger", 10, nullptr, "the only version"}, {"ConvInteger", 10, nullptr, "the only version"},
    {"QLinearMatMul", 10, nullptr, "oldest read"}, {"QLinearMatMul", 21, nullptr, "more types, f16 / bf16 scales"},
    {"QLinearConv", 10, nullptr, "the only version"},
    {"DynamicQuantizeLinear", 11, nullptr, "the only version"},
    {"NegativeLogLikelihoodLoss", 12, nullptr, "oldest read"}, {"NegativeLogLikelihoodLoss", 13, nullptr, "bf16"},
    {"NegativeLogLikelihoodLoss", 22, nullptr, "bf16 dropped, more float types"},
    {"SoftmaxCrossEntropyLoss", 12, nullptr, "oldest read"}, {"SoftmaxCrossEntropyLoss", 13, nullptr, "bf16"},
    // Recurrent operators unrolled into kiln ops (import_rewrites_recurrent.cpp)
    {"RNN", 7, nullptr, "oldest read"}, {"RNN", 14, nullptr, "layout"}, {"RNN", 22, nullptr, "bf16"},
    {"GRU", 7, nullptr, "oldest read"}, {"GRU", 14, nullptr, "layout"}, {"GRU", 22, nullptr, "bf16"},
    {"LSTM", 7, nullptr, "oldest read"}, {"LSTM", 14, nullptr, "layout"}, {"LSTM", 22, nullptr, "bf16"},
    // Einsum, CenterCropPad and RotaryEmbedding as kiln ops (import_rewrites_einsum.cpp, _crop_rotary.cpp)
    {"Einsum", 12, nullptr, "the only version"},
    {"CenterCropPad", 18, nullptr, "the only version"},
    {"RotaryEmbedding", 23, nullptr, "the only version"},
    // Activations and elementwise functions read as their function bodies (import_rewrites_math.cpp)
    {"Acosh", 9, nullptr, "oldest read"}, {"Acosh", 22, nullptr, "bf16"},
    {"Asinh", 9, nullptr, "oldest read"}, {"Asinh", 22, nullptr, "bf16"},
    {"Atanh", 9, nullptr, "oldest read"}, {"Atanh", 22, nullptr, "bf16"},
    {"Celu", 12, nullptr, "oldest read"}, {"Celu", 28, nullptr, "more float types"},
    {"Cosh", 9, nullptr, "oldest read"}, {"Cosh", 22, nullptr, "bf16"},
    {"EyeLike", 9, nullptr, "oldest read"}, {"EyeLike", 22, nullptr, "bf16"},
    {"Gelu", 20, nullptr, "the only version"},
    {"GlobalMaxPool", 1, nullptr, "oldest read"}, {"GlobalMaxPool", 22, nullptr, "bf16"},
    {"Hardmax", 13, nullptr, "oldest read (one axis; 1 and 11 flatten from the axis)"},
    {"LpNormalization", 1, nullptr, "oldest read"}, {"LpNormalization", 22, nullptr, "bf16"},
    {"LpPool", 2, nullptr, "oldest read (p an int)"}, {"LpPool", 11, nullptr, "pads on auto_pad"},
    {"LpPool", 18, nullptr, "ceil_mode, dilations"}, {"LpPool", 22, nullptr, "bf16"},
    {"MeanVarianceNormalization", 9, nullptr, "oldest read"}, {"MeanVarianceNormalization", 13, nullptr, "bf16"},
    {"Mish", 18, nullptr, "oldest read"}, {"Mish", 22, nullptr, "bf16"},
    {"PRelu", 7, nullptr, "oldest read (slope broadcasts)"}, {"PRelu", 9, nullptr, "integer types"},
    {"PRelu", 16, nullptr, "bf16"},
    {"Round", 11, nullptr, "oldest read"}, {"Round", 22, nullptr, "bf16"},
    {"Selu", 6, nullptr, "oldest read"}, {"Selu", 22, nullptr, "bf16"},
    {"Shrink", 9, nullptr, "the only version"},
    {"Sign", 9, nullptr, "oldest read"}, {"Sign", 13, nullptr, "bf16"},
    {"Sinh", 9, nullptr, "oldest read"}, {"Sinh", 22, nullptr, "bf16"},
    {"Softsign", 1, nullptr, "oldest read"}, {"Softsign", 22, nullptr, "bf16"},
    {"Swish", 24, nullptr, "the only version"},
    {"Tan", 7, nullptr, "oldest read"}, {"Tan", 22, nullptr, "bf16"},
    {"ThresholdedRelu", 10, nullptr, "oldest read"}, {"ThresholdedRelu", 22, nullptr, "bf16"},
};

// The rows of one operator, in version order.
std::span<const VersionStep> rows_of(std::string_view op) {
  const VersionStep* begin = std::begin(kSteps);
  while (begin != std::end(kSteps) && begin->op != op) ++begin;
  const VersionStep* end = begin;
  while (end != std::end(kSteps) && end->op == op) ++end;
  return {begin, end};
}

}  // namespace

std::span<const VersionStep> version_steps() { return kSteps; }

std::pair<int, int> kiln_version_range(std::string_view op) {
  auto rows = rows_of(op);
  if (rows.empty()) return {0, 0};
  return {rows.front().version, rows.back().version};
}

OpSupport check_op_support(const std::string& op_type, int64_t opset, const std::string& node_name) {
  OpSupport s;
  s.op = op_from_name(op_type);
  s.rewritten = is_rewritten_op(op_type);
  const OnnxOpVersions* onnx = onnx_op_versions(op_type);
  if (!onnx) {
    if (s.op) internal_error("onnx import: kiln op {} is missing from ONNX's version table", op_type);
    unsupported("node '{}': unsupported operator '{}'", node_name, op_type);
  }
  s.version = onnx_op_version(*onnx, opset);
  if (s.version == 0) {
    if (onnx->deprecated_since && opset >= onnx->deprecated_since)
      user_error("node '{}': operator {} was removed from the default domain in opset {} (the model's opset is {})",
                 node_name, op_type, onnx->deprecated_since, opset);
    user_error("node '{}': operator {} does not exist in opset {} (it was added in opset {})", node_name, op_type,
               opset, onnx->versions[0]);
  }
  if (!s.op && !s.rewritten) unsupported("node '{}': unsupported operator '{}'", node_name, op_type);
  auto [oldest, newest] = kiln_version_range(op_type);
  bool known = false;
  for (const VersionStep& r : rows_of(op_type)) known |= r.version == s.version;
  if (!known)
    unsupported("node '{}': {} version {} (selected by opset {}) is not supported (kiln reads versions {} to {})",
                node_name, op_type, s.version, opset, oldest, newest);
  return s;
}

void adapt_to_newest(OnnxGraphReader& b, NodeForm& n) {
  for (const VersionStep& r : rows_of(n.op_type)) {
    if (r.version <= n.version) continue;
    if (r.adapt) r.adapt(b, n);
    n.version = r.version;
  }
}

}  // namespace kiln
