// RMSNormalization, InstanceNormalization, GroupNormalization, LRN, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss read as kiln ops: the normalisations as their ONNX function bodies (ReduceMean,
// Sqrt, Div, ...; LRN's window sum as shifted slices), the losses as a
// GatherElements of the log-probabilities (after LogSoftmax for the cross entropy) with their weights
// and reduction.
#include <fmt/format.h>

#include <limits>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

ValueId float_scalar(OnnxGraphReader& b, const std::string& base, DType t, double v) {
  Tensor c = t == DType::f64 ? Tensor::scalar(DType::f64, v) : Tensor::scalar(DType::f32, static_cast<float>(v));
  return b.graph().add_constant(b.unique_name(base), std::move(c));
}

// (x - mean) / sqrt(var + epsilon), the moments over `axes` (a constant 1-D i64 tensor).
ValueId normalized(OnnxGraphReader& b, const NodeForm& n, ValueId x, ValueId axes) {
  AttrMap keep;
  keep["keepdims"] = Attribute{int64_t{1}};
  ValueId mean = add(b, n, OpKind::ReduceMean, {x, axes}, "mean", keep);
  ValueId centred = add(b, n, OpKind::Sub, {x, mean}, "centred");
  ValueId var = add(b, n, OpKind::ReduceMean, {add(b, n, OpKind::Mul, {centred, centred}, "square"), axes}, "var", keep);
  ValueId eps = b.scalar_like(n.name + "_epsilon", n.float_attr("epsilon", 1e-5), x);
  ValueId deviation = add(b, n, OpKind::Sqrt, {add(b, n, OpKind::Add, {var, eps}, "var_eps")}, "std");
  return add(b, n, OpKind::Div, {centred, deviation}, "normalized");
}

// The node's output: normed * scale + bias, both [C] inputs 1 and 2 reshaped to [C, 1, ...] for `rank`.
void per_channel_affine(OnnxGraphReader& b, const NodeForm& n, ValueId normed, int rank) {
  std::vector<int64_t> per_channel{-1};
  for (int a = 2; a < rank; ++a) per_channel.push_back(1);
  ValueId shape = b.constant_i64(n.name + "_channel_shape", per_channel);
  ValueId scale = add(b, n, OpKind::Reshape, {n.inputs[1], shape}, "scale");
  ValueId bias = add(b, n, OpKind::Reshape, {n.inputs[2], shape}, "bias");
  add(b, n, OpKind::Add, {add(b, n, OpKind::Mul, {normed, scale}, "scaled"), bias}, "out", {}, n.outputs[0]);
}

// loss[n, d...] = -input[n, target[n, d...], d...] * weight[target[n, d...]], 0 where target is
// ignore_index; reduced by 'reduction' (mean: divided by the sum of the weights used).
void nll(OnnxGraphReader& b, const NodeForm& n, ValueId input, ValueId target, ValueId weight, const std::string& out) {
  std::string reduction = n.string_attr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    user_error("{}: reduction '{}' is not one of none, sum, mean", n.desc(), reduction);
  ValueId t = target, keep = kNoValue;
  if (n.attrs.count("ignore_index")) {
    ValueId ignore = int_scalar_like(b, n.name + "_ignore_index", n.int_attr("ignore_index", 0), target);
    keep = add(b, n, OpKind::Not, {add(b, n, OpKind::Equal, {target, ignore}, "ignored")}, "kept");
    t = add(b, n, OpKind::Where, {keep, target, int_scalar_like(b, n.name + "_zero", 0, target)}, "target");
  }
  ValueId axis1 = b.constant_i64(n.name + "_axis1", {1});
  AttrMap gather_attrs;
  gather_attrs["axis"] = Attribute{int64_t{1}};
  ValueId picked = add(b, n, OpKind::GatherElements, {input, add(b, n, OpKind::Unsqueeze, {t, axis1}, "index")},
                       "picked", std::move(gather_attrs));
  ValueId loss = add(b, n, OpKind::Neg, {add(b, n, OpKind::Squeeze, {picked, axis1}, "picked_1d")}, "neg");
  ValueId w = kNoValue;
  if (weight != kNoValue) {
    AttrMap a;
    a["axis"] = Attribute{int64_t{0}};
    w = add(b, n, OpKind::Gather, {weight, t}, "weight", std::move(a));
  }
  if (keep != kNoValue) {
    ValueId kw = add(b, n, OpKind::CastLike, {keep, input}, "kept_weight");
    w = w == kNoValue ? kw : add(b, n, OpKind::Mul, {w, kw}, "weight_kept");
  }
  if (w != kNoValue) loss = add(b, n, OpKind::Mul, {loss, w}, "weighted");
  AttrMap flat;
  flat["keepdims"] = Attribute{int64_t{0}};
  if (reduction == "none") {
    add(b, n, OpKind::Identity, {loss}, "out", {}, out);
  } else if (reduction == "sum") {
    add(b, n, OpKind::ReduceSum, {loss}, "out", flat, out);
  } else if (w == kNoValue) {
    add(b, n, OpKind::ReduceMean, {loss}, "out", flat, out);
  } else {
    ValueId total = add(b, n, OpKind::ReduceSum, {loss}, "total", flat);
    ValueId weights = add(b, n, OpKind::ReduceSum, {w}, "weights", flat);
    add(b, n, OpKind::Div, {total, weights}, "out", {}, out);
  }
}

}  // namespace

// Y = X / sqrt(mean(X^2 over axes axis..rank-1) + epsilon) * scale; halves (and inputs of a type not
// known at import) in f32 as stash_type 1 says, the normalised value cast back before the scale.
void rms_normalization(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (scale) is missing", n.desc());
  int64_t axis = n.int_attr("axis", -1);
  if (n.int_attr("stash_type", 1) != 1) unsupported("{}: stash_type {} is not supported (1: f32)", n.desc(), n.int_attr("stash_type", 1));
  ValueId x = n.inputs[0];
  std::optional<DType> t = b.known_dtype(x);
  bool widen = t != DType::f32 && t != DType::f64;
  ValueId xs = x;
  if (widen) {
    AttrMap to;
    to["to"] = Attribute{std::string(dtype_name(DType::f32))};
    xs = add(b, n, OpKind::Cast, {x}, "f32", std::move(to));
  }
  ValueId axes;
  std::optional<int> rank = b.known_rank(x);
  if (axis < 0 || rank) {
    int64_t end = axis < 0 ? 0 : *rank;
    if (axis >= end) user_error("{}: axis {} is out of range for rank {}", n.desc(), axis, end);
    std::vector<int64_t> list;
    for (int64_t a = axis; a < end; ++a) list.push_back(a);
    axes = b.constant_i64(n.name + "_axes", list);
  } else {  // [axis, rank) from the run-time rank
    ValueId r = add(b, n, OpKind::Size, {add(b, n, OpKind::Shape, {x}, "shape")}, "rank");
    axes = add(b, n, OpKind::Range,
               {b.graph().add_constant(b.unique_name(n.name + "_axis"), Tensor::scalar(DType::i64, axis)), r,
                b.graph().add_constant(b.unique_name(n.name + "_one"), Tensor::scalar(DType::i64, int64_t{1}))},
               "axes");
  }
  DType ct = widen ? DType::f32 : *t;
  AttrMap keep;
  keep["keepdims"] = Attribute{int64_t{1}};
  ValueId ms = add(b, n, OpKind::ReduceMean, {add(b, n, OpKind::Mul, {xs, xs}, "square"), axes}, "mean_square",
                   std::move(keep));
  ValueId eps = float_scalar(b, n.name + "_epsilon", ct, n.float_attr("epsilon", 1e-5));
  ValueId rms = add(b, n, OpKind::Sqrt, {add(b, n, OpKind::Add, {ms, eps}, "mean_square_eps")}, "rms");
  ValueId normed = add(b, n, OpKind::Div, {xs, rms}, "normalized");
  if (widen) normed = add(b, n, OpKind::CastLike, {normed, x}, "normalized_cast");
  add(b, n, OpKind::Mul, {normed, n.inputs[1]}, "out", {}, n.outputs[0]);
}

// BatchNormalization: in inference mode the kiln op itself. In training mode (opset 14 on) Y normalizes
// with the batch's mean and (population) variance over every axis but 1, and the optional outputs are
// running_mean = input_mean * momentum + mean * (1 - momentum), and running_var the same of the variance.
void batch_normalization(OnnxGraphReader& b, NodeForm& n) {
  const int64_t training = n.int_attr("training_mode", 0);
  if (training != 0 && training != 1) user_error("{}: training_mode is {}, not 0 or 1", n.desc(), training);
  if (training == 0) {
    b.add_node(OpKind::BatchNormalization, std::move(n.inputs), n.outputs, n.name, std::move(n.attrs));
    return;
  }
  need_io(n);
  for (size_t i = 1; i < 5; ++i)
    if (!n.has_input(i)) user_error("{}: input {} is missing", n.desc(), i);
  if (n.outputs.size() > 3) user_error("{}: has {} outputs (Y, running_mean, running_var)", n.desc(), n.outputs.size());
  ValueId x = n.inputs[0];
  std::optional<int> rank = b.known_rank(x);
  if (!rank) unsupported("{}: the input's rank must be declared in training mode", n.desc());
  if (*rank < 2) user_error("{}: the input must have rank 2 or more, has {}", n.desc(), *rank);
  std::vector<int64_t> axes_list{0};
  for (int64_t a = 2; a < *rank; ++a) axes_list.push_back(a);
  const ValueId axes = b.constant_i64(n.name + "_axes", axes_list);
  AttrMap keep;
  keep["keepdims"] = Attribute{int64_t{1}};
  ValueId mean = add(b, n, OpKind::ReduceMean, {x, axes}, "mean", keep);
  ValueId centred = add(b, n, OpKind::Sub, {x, mean}, "centred");
  ValueId var = add(b, n, OpKind::ReduceMean, {add(b, n, OpKind::Mul, {centred, centred}, "square"), axes}, "var", keep);
  ValueId eps = b.scalar_like(n.name + "_epsilon", n.float_attr("epsilon", 1e-5), x);
  ValueId deviation = add(b, n, OpKind::Sqrt, {add(b, n, OpKind::Add, {var, eps}, "var_eps")}, "std");
  per_channel_affine(b, n, add(b, n, OpKind::Div, {centred, deviation}, "normalized"), *rank);
  const double momentum = n.float_attr("momentum", 0.9);
  const ValueId flat = b.constant_i64(n.name + "_flat", {-1});
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!n.has_output(i)) continue;
    const ValueId running = n.inputs[i + 2], batch = add(b, n, OpKind::Reshape, {i == 1 ? mean : var, flat}, "batch");
    ValueId kept = add(b, n, OpKind::Mul, {running, b.scalar_like(n.name + "_momentum", momentum, running)}, "kept");
    ValueId fresh = add(b, n, OpKind::Mul, {add(b, n, OpKind::CastLike, {batch, running}, "batch_cast"),
                                            b.scalar_like(n.name + "_rest", 1 - momentum, running)}, "fresh");
    add(b, n, OpKind::Add, {kept, fresh}, "running", {}, n.outputs[i]);
  }
}

// Y = scale (X - mean) / sqrt(var + epsilon) + B per (n, c), over the spatial axes; scale and B are
// per channel. The rank must be declared (scale and B are reshaped to [C, 1, ...]).
void instance_normalization(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1) || !n.has_input(2)) user_error("{}: inputs scale and B are required", n.desc());
  ValueId x = n.inputs[0];
  std::optional<int> rank = b.known_rank(x);
  if (!rank) unsupported("{}: the input's rank must be declared", n.desc());
  if (*rank < 3) user_error("{}: the input must have rank 3 or more, has {}", n.desc(), *rank);
  std::vector<int64_t> spatial;
  for (int64_t a = 2; a < *rank; ++a) spatial.push_back(a);
  per_channel_affine(b, n, normalized(b, n, x, b.constant_i64(n.name + "_axes", spatial)), *rank);
}

// Y = (X - mean) / sqrt(var + epsilon) over each group of C / num_groups channels (and the spatial
// axes) of each n, then scale and bias per channel (opset 21); in f32 for halves (stash_type 1).
void group_normalization(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1) || !n.has_input(2)) user_error("{}: inputs scale and bias are required", n.desc());
  if (n.int_attr("stash_type", 1) != 1) unsupported("{}: stash_type {} is not supported (1: f32)", n.desc(), n.int_attr("stash_type", 1));
  const int64_t groups = n.int_attr("num_groups", 0);
  if (groups < 1) user_error("{}: num_groups must be at least 1, is {}", n.desc(), groups);
  ValueId x = n.inputs[0];
  std::optional<int> rank = b.known_rank(x);
  if (!rank) unsupported("{}: the input's rank must be declared", n.desc());
  if (*rank < 2) user_error("{}: the input must have rank 2 or more, has {}", n.desc(), *rank);
  if (const Dim& c = b.graph().value(x).type.shape[1]; c.is_static() && c.value % groups != 0)
    user_error("{}: {} channels do not divide into {} groups", n.desc(), c.value, groups);
  std::optional<DType> t = b.known_dtype(x);
  const bool widen = t != DType::f32 && t != DType::f64;
  ValueId xs = x;
  if (widen) {
    AttrMap to;
    to["to"] = Attribute{std::string(dtype_name(DType::f32))};
    xs = add(b, n, OpKind::Cast, {x}, "f32", std::move(to));
  }
  ValueId grouped = add(b, n, OpKind::Reshape, {xs, b.constant_i64(n.name + "_groups", {0, groups, -1})}, "grouped");
  ValueId normed = normalized(b, n, grouped, b.constant_i64(n.name + "_axes", {2}));
  normed = add(b, n, OpKind::Reshape, {normed, add(b, n, OpKind::Shape, {x}, "shape")}, "ungrouped");
  if (widen) normed = add(b, n, OpKind::CastLike, {normed, x}, "normalized_cast");
  per_channel_affine(b, n, normed, *rank);
}

// Y = X / (bias + alpha / size * S)^beta, S the sum of X^2 over the channels c - floor((size - 1) / 2) to
// c + ceil((size - 1) / 2) (those that exist): the squares padded with zeros along the channels and
// `size` shifted slices of them added, so that a NaN or inf reaches only its own window.
void lrn(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  const int64_t size = n.int_attr("size", 0);
  if (size < 1) user_error("{}: attribute 'size' must be at least 1, is {}", n.desc(), size);
  ValueId x = n.inputs[0];
  std::optional<int> rank = b.known_rank(x);
  if (!rank) unsupported("{}: the input's rank must be declared", n.desc());
  if (*rank < 2) user_error("{}: the input must have rank 2 or more, has {}", n.desc(), *rank);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<int64_t> pads(size_t(2 * *rank), 0);
  pads[1] = before;
  pads[size_t(*rank + 1)] = after;
  ValueId square = add(b, n, OpKind::Mul, {x, x}, "square");
  ValueId padded = add(b, n, OpKind::Pad, {square, b.constant_i64(n.name + "_pads", pads)}, "padded");
  ValueId axis = b.constant_i64(n.name + "_axis", {1});
  ValueId sum = kNoValue;
  for (int64_t k = 0; k < size; ++k) {  // the window's k-th channel: padded[:, k : k + C]
    const int64_t end = k - (size - 1) == 0 ? std::numeric_limits<int64_t>::max() : k - (size - 1);
    ValueId slice = add(b, n, OpKind::Slice, {padded, b.constant_i64(n.name + "_start", {k}),
                                              b.constant_i64(n.name + "_end", {end}), axis},
                        "window");
    sum = sum == kNoValue ? slice : add(b, n, OpKind::Add, {sum, slice}, "window_sum");
  }
  ValueId scaled = add(b, n, OpKind::Mul, {sum, b.scalar_like(n.name + "_alpha", n.float_attr("alpha", 1e-4) / double(size), x)}, "scaled");
  ValueId base = add(b, n, OpKind::Add, {scaled, b.scalar_like(n.name + "_bias", n.float_attr("bias", 1.0), x)}, "base");
  ValueId denom = add(b, n, OpKind::Pow, {base, b.scalar_like(n.name + "_beta", n.float_attr("beta", 0.75), x)}, "denominator");
  add(b, n, OpKind::Div, {x, denom}, "out", {}, n.outputs[0]);
}

void negative_log_likelihood_loss(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (target) is missing", n.desc());
  nll(b, n, n.inputs[0], n.inputs[1], n.has_input(2) ? n.inputs[2] : kNoValue, n.outputs[0]);
}

// log_prob = LogSoftmax(scores, axis=1), then the negative log-likelihood of the labels.
void softmax_cross_entropy_loss(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (labels) is missing", n.desc());
  AttrMap axis;
  axis["axis"] = Attribute{int64_t{1}};
  ValueId log_prob = add(b, n, OpKind::LogSoftmax, {n.inputs[0]}, "log_prob", std::move(axis),
                         n.has_output(1) ? n.outputs[1] : std::string());
  nll(b, n, log_prob, n.inputs[1], n.has_input(2) ? n.inputs[2] : kNoValue, n.outputs[0]);
}

}  // namespace kiln::rewrites
