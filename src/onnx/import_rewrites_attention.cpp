// Attention (opsets 23 to 25) read as the chain kiln's attention fusion knows: Q and K each scaled by
// sqrt(scale), Q K^T, softcap, the mask, the causal frontier and nonpad_kv_seqlen's padding as one
// additive bias, Softmax (zeros for a row with every key masked), times V. 3-D inputs ([batch, seq,
// heads x head_size]) are split into heads first and joined after; past_key / past_value are
// concatenated in front of K and V (present_key / present_value); grouped-query attention repeats each
// K / V head for its group of query heads. Query i sits at key i + offset (the past length, else
// nonpad_kv_seqlen less the queries, per batch, else 0): is_causal keeps the keys up to it, version 25's
// left / right windows those around it. qk_matmul_output is the scores after the product (mode 0), the
// softcap (1), the bias (2) or the softmax (3).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>
#include <limits>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

struct Chain {
  OnnxGraphReader& b;
  const NodeForm& n;
  ValueId like;  // Q: the element type of every float constant

  ValueId op(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}, const std::string& out = {}) {
    return add(b, n, k, std::move(in), "t", std::move(attrs), out);
  }
  ValueId i64s(const std::vector<int64_t>& v) { return b.constant_i64(n.name + "_i", v); }
  ValueId i64(int64_t v) { return b.graph().add_constant(b.unique_name(n.name + "_i"), Tensor::scalar(DType::i64, v)); }
  ValueId f(double v) { return b.scalar_like(n.name + "_c", v, like); }
  ValueId dim(ValueId x, int64_t axis) { return op(OpKind::Gather, {op(OpKind::Shape, {x}), i64s({axis})}); }
  ValueId transpose(ValueId x, std::vector<int64_t> perm) {
    return op(OpKind::Transpose, {x}, one_attr("perm", Attribute{std::move(perm)}));
  }
  // [batch, seq, heads x size] -> [batch, heads, seq, size].
  ValueId split_heads(ValueId x, int64_t heads) {
    return transpose(op(OpKind::Reshape, {x, i64s({0, 0, heads, -1})}), {0, 2, 1, 3});
  }
  // K or V [batch, kv_heads, seq, size] with each head repeated for its q_heads / kv_heads query heads.
  ValueId repeat_heads(ValueId kv, ValueId q) {
    ValueId reps = op(OpKind::Div, {dim(q, 1), dim(kv, 1)});
    ValueId wide = op(OpKind::Expand, {op(OpKind::Unsqueeze, {kv, i64s({2})}),
                                       op(OpKind::Concat, {i64s({1, 1}), reps, i64s({1, 1})}, axis(0))});
    ValueId shape = op(OpKind::Concat, {dim(kv, 0), i64s({-1}), dim(kv, 2), dim(kv, 3)}, axis(0));
    return op(OpKind::Reshape, {wide, shape});
  }
  static AttrMap axis(int64_t a) { return one_attr("axis", Attribute{a}); }
  // 0 where `keep`, -inf elsewhere, in Q's type.
  ValueId bias_of(ValueId keep) {
    return op(OpKind::Where, {keep, f(0.0), f(-std::numeric_limits<double>::infinity())});
  }
};

void attention(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1) || !n.has_input(2)) user_error("{}: inputs K and V are required", n.desc());
  if (n.has_input(4) != n.has_input(5)) user_error("{}: past_key and past_value come together", n.desc());
  const int64_t qk_mode = n.int_attr("qk_matmul_output_mode", 0);
  if (qk_mode < 0 || qk_mode > 3) user_error("{}: qk_matmul_output_mode {} (expected 0 to 3)", n.desc(), qk_mode);
  static constexpr std::string_view kAttributes[] = {"is_causal",  "kv_num_heads", "left_window_size",
                                                      "q_num_heads", "qk_matmul_output_mode", "right_window_size",
                                                      "scale",      "softcap",      "softmax_precision"};
  for (const auto& [name, a] : n.attrs)
    if (std::find(std::begin(kAttributes), std::end(kAttributes), name) == std::end(kAttributes))
      unsupported("{}: attribute '{}' is not supported", n.desc(), name);
  Chain c{b, n, n.inputs[0]};
  std::optional<int> rank = b.known_rank(n.inputs[0]);
  if (!rank || (*rank != 3 && *rank != 4)) unsupported("{}: Q must be declared 3-D or 4-D", n.desc());
  ValueId q = n.inputs[0], k = n.inputs[1], v = n.inputs[2];
  if (*rank == 3) {
    const int64_t q_heads = n.int_attr("q_num_heads", 0), kv_heads = n.int_attr("kv_num_heads", 0);
    if (q_heads <= 0 || kv_heads <= 0)
      user_error("{}: 3-D inputs need q_num_heads and kv_num_heads (got {} and {})", n.desc(), q_heads, kv_heads);
    q = c.split_heads(q, q_heads), k = c.split_heads(k, kv_heads), v = c.split_heads(v, kv_heads);
  }
  if (n.has_input(4)) {
    k = c.op(OpKind::Concat, {n.inputs[4], k}, Chain::axis(2), n.has_output(1) ? n.outputs[1] : std::string());
    v = c.op(OpKind::Concat, {n.inputs[5], v}, Chain::axis(2), n.has_output(2) ? n.outputs[2] : std::string());
  } else {
    if (n.has_output(1)) k = c.op(OpKind::Identity, {k}, {}, n.outputs[1]);
    if (n.has_output(2)) v = c.op(OpKind::Identity, {v}, {}, n.outputs[2]);
  }

  // sqrt(scale) on each side, as the operator's definition scales them; scale defaults to 1/sqrt(size).
  ValueId root_scale;
  if (n.attrs.count("scale")) {
    root_scale = c.f(std::sqrt(n.float_attr("scale", 1.0)));
  } else {
    ValueId size = cast_to(b, n, c.dim(q, 3), DType::f32);
    ValueId one = b.graph().add_constant(b.unique_name(n.name + "_one"), Tensor::scalar(DType::f32, 1.0f));
    ValueId s = c.op(OpKind::Sqrt, {c.op(OpKind::Div, {one, c.op(OpKind::Sqrt, {size})})});
    root_scale = c.op(OpKind::CastLike, {s, c.like});
  }
  ValueId kr = c.repeat_heads(k, q), vr = c.repeat_heads(v, q);
  ValueId scores = c.op(OpKind::MatMul, {c.op(OpKind::Mul, {q, root_scale}),
                                         c.op(OpKind::Mul, {c.transpose(kr, {0, 1, 3, 2}), root_scale})});
  std::vector<ValueId> stages{scores};  // what qk_matmul_output can be, by mode
  if (double cap = n.float_attr("softcap", 0.0); cap > 0)
    scores = c.op(OpKind::Mul, {c.op(OpKind::Tanh, {c.op(OpKind::Div, {scores, c.f(cap)})}), c.f(cap)});
  stages.push_back(scores);

  // The mask (bool: true keeps; float: added) padded to the keys with masked columns, then the causal
  // frontier: query i sees key j when j <= i + past length.
  ValueId keys = c.dim(kr, 2);
  std::optional<ValueId> bias;
  if (n.has_input(3)) {
    ValueId mask = n.inputs[3];
    std::optional<DType> mt = b.known_dtype(mask);
    if (!mt) unsupported("{}: the attn_mask's element type must be declared", n.desc());
    if (*mt != DType::boolean && !is_f32_or_half(*mt) && *mt != DType::f64)
      user_error("{}: attn_mask of {} (expected bool or a float type)", n.desc(), dtype_name(*mt));
    std::optional<int> mrank = b.known_rank(mask);
    if (!mrank || *mrank < 1) unsupported("{}: the attn_mask's rank must be declared", n.desc());
    // Pads: nothing before any axis, keys - mask width after the last.
    std::vector<int64_t> zeros(size_t(2 * *mrank - 1), 0);
    ValueId after = c.op(OpKind::Sub, {keys, c.dim(mask, -1)});
    ValueId pads = c.op(OpKind::Concat, {c.i64s(zeros), after}, Chain::axis(0));
    ValueId as_bias = *mt == DType::boolean ? c.bias_of(mask) : c.op(OpKind::CastLike, {mask, c.like});
    bias = c.op(OpKind::Pad, {as_bias, pads, c.f(-std::numeric_limits<double>::infinity())});
  }
  // nonpad_kv_seqlen [batch] as [batch, 1, 1, 1], against the key index.
  const ValueId kept_keys = n.has_input(6) ? c.op(OpKind::Reshape, {n.inputs[6], c.i64s({-1, 1, 1, 1})}) : kNoValue;
  // Query i sits at key position i + offset: the past length, else the keys kept less the queries
  // (per batch), else 0. is_causal keeps the keys up to it; version 25's windows the keys within
  // left_window_size before and right_window_size after it (-1: no bound).
  const bool causal = n.int_attr("is_causal", 0) != 0;
  const int64_t left = n.int_attr("left_window_size", -1), right = causal ? 0 : n.int_attr("right_window_size", -1);
  if (causal || left >= 0 || right >= 0) {
    ValueId offset = n.has_input(4) ? c.dim(n.inputs[4], 2)
                     : kept_keys != kNoValue ? c.op(OpKind::Sub, {kept_keys, c.dim(q, 2)})
                                             : c.i64s({0});
    ValueId rows = c.op(OpKind::Range, {c.i64(0), c.op(OpKind::Squeeze, {c.dim(q, 2), c.i64s({0})}), c.i64(1)});
    ValueId cols = c.op(OpKind::Range, {c.i64(0), c.op(OpKind::Squeeze, {keys, c.i64s({0})}), c.i64(1)});
    ValueId at = c.op(OpKind::Add, {c.op(OpKind::Unsqueeze, {rows, c.i64s({1})}), offset});
    std::optional<ValueId> keep;
    auto both = [&](ValueId k) { keep = keep ? c.op(OpKind::And, {*keep, k}) : k; };
    if (right >= 0) both(c.op(OpKind::LessOrEqual, {cols, c.op(OpKind::Add, {at, c.i64(right)})}));
    if (left >= 0) both(c.op(OpKind::GreaterOrEqual, {cols, c.op(OpKind::Sub, {at, c.i64(left)})}));
    ValueId window = c.bias_of(*keep);
    bias = bias ? c.op(OpKind::Add, {*bias, window}) : window;
  }
  if (kept_keys != kNoValue) {
    ValueId cols = c.op(OpKind::Range, {c.i64(0), c.op(OpKind::Squeeze, {keys, c.i64s({0})}), c.i64(1)});
    ValueId padding = c.bias_of(c.op(OpKind::Less, {cols, kept_keys}));
    bias = bias ? c.op(OpKind::Add, {*bias, padding}) : padding;
  }
  if (bias) scores = c.op(OpKind::Add, {scores, *bias});
  stages.push_back(scores);
  ValueId probs = c.op(OpKind::Softmax, {scores}, Chain::axis(-1));
  // A row whose every key is masked gives zeros, not the NaN of a softmax over -inf. The causal frontier
  // alone never masks a whole row (key 0 is at or before every query) unless nonpad_kv_seqlen moves it.
  const bool may_mask_rows = n.has_input(3) || kept_keys != kNoValue || left >= 0;
  if (bias && may_mask_rows) {
    ValueId row_max = c.op(OpKind::ReduceMax, {*bias, c.i64s({-1})}, one_attr("keepdims", Attribute{int64_t{1}}));
    ValueId none = c.op(OpKind::Equal, {row_max, c.f(-std::numeric_limits<double>::infinity())});
    probs = c.op(OpKind::Where, {none, c.f(0.0), probs});
  }
  stages.push_back(probs);
  if (n.has_output(3)) c.op(OpKind::Identity, {stages[size_t(qk_mode)]}, {}, n.outputs[3]);
  if (*rank == 4) {
    c.op(OpKind::MatMul, {probs, vr}, {}, n.outputs[0]);
    return;
  }
  ValueId y = c.transpose(c.op(OpKind::MatMul, {probs, vr}), {0, 2, 1, 3});
  c.op(OpKind::Reshape, {y, c.i64s({0, 0, -1})}, {}, n.outputs[0]);
}

}  // namespace

void attention_rewrite(OnnxGraphReader& b, NodeForm& n) { attention(b, n); }

}  // namespace kiln::rewrites
