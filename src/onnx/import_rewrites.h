// Internal to the importer: the rewrites of ONNX operators that kiln reads as others (the table is in
// import_rewrites.cpp; the normalisation and loss operators in import_rewrites_nn.cpp, activations
// and elementwise functions in import_rewrites_math.cpp, DepthToSpace / SpaceToDepth in
// import_rewrites_shape.cpp, the recurrent operators in import_rewrites_recurrent.cpp, Einsum in
// import_rewrites_einsum.cpp, CenterCropPad and RotaryEmbedding in import_rewrites_crop_rotary.cpp).
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "onnx/graph_reader.h"

namespace kiln::rewrites {

// Adds `op` with one output, named `out` (a model name) or a fresh name from `what`; returns it.
ValueId add(OnnxGraphReader& b, const NodeForm& n, OpKind op, std::vector<ValueId> inputs, const std::string& what,
            AttrMap attrs = {}, const std::string& out = {});
// A user error unless input 0 and output 0 are there.
void need_io(const NodeForm& n);
// An attribute map of one entry.
AttrMap one_attr(const char* name, Attribute a);
// Cast(x, to): one output named `out` (a model name) or a fresh one.
ValueId cast_to(OnnxGraphReader& b, const NodeForm& n, ValueId x, DType to, const std::string& out = {});
// A scalar i64 constant of `like`'s integer type (through CastLike where that is not known).
ValueId int_scalar_like(OnnxGraphReader& b, const std::string& base, int64_t v, ValueId like);

struct RewriteRow {
  std::string_view op;
  void (*rewrite)(OnnxGraphReader& b, NodeForm& n);
};
// The activations and elementwise functions (import_rewrites_math.cpp), sorted by name.
std::span<const RewriteRow> math_rewrites();
// DepthToSpace, OneHot and SpaceToDepth (import_rewrites_shape.cpp).
std::span<const RewriteRow> shape_rewrites();
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (import_rewrites_quantize.cpp).
std::span<const RewriteRow> quantize_rewrites();
// RNN, GRU and LSTM unrolled over a static sequence length (import_rewrites_recurrent.cpp).
std::span<const RewriteRow> recurrent_rewrites();
// Einsum as transposes, diagonals, sums and batched products (import_rewrites_einsum.cpp).
std::span<const RewriteRow> einsum_rewrites();
// CenterCropPad as Pad, RotaryEmbedding as slices and products (import_rewrites_crop_rotary.cpp).
std::span<const RewriteRow> dft_rewrites();
std::span<const RewriteRow> crop_rotary_rewrites();
// Adagrad, Adam and Momentum of ai.onnx.preview.training (import_rewrites_training.cpp).
std::span<const RewriteRow> training_rewrites();

// Round half to even of x (any float type): f + 1 where x - f > 0.5 or where it is 0.5 and f = floor(x)
// is odd; NaN and infinities stay as they are (import_rewrites_math.cpp). `out` names the result.
ValueId round_half_even(OnnxGraphReader& b, const NodeForm& n, ValueId x, const std::string& out = {});

void rms_normalization(OnnxGraphReader& b, NodeForm& n);
void negative_log_likelihood_loss(OnnxGraphReader& b, NodeForm& n);
void softmax_cross_entropy_loss(OnnxGraphReader& b, NodeForm& n);
void instance_normalization(OnnxGraphReader& b, NodeForm& n);
void batch_normalization(OnnxGraphReader& b, NodeForm& n);
void group_normalization(OnnxGraphReader& b, NodeForm& n);
void lrn(OnnxGraphReader& b, NodeForm& n);
void attention_rewrite(OnnxGraphReader& b, NodeForm& n);  // import_rewrites_attention.cpp

}  // namespace kiln::rewrites
