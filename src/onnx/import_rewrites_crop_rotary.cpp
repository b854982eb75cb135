// CenterCropPad (18) and RotaryEmbedding (23) as kiln ops, each following its ONNX function body.
// CenterCropPad is one Pad whose amounts are computed from the shapes at run time (the target shape is
// an input): half the difference before and the rest after, negative where the axis is cropped, so that
// a crop keeps the centre (floor((in - out) / 2) from the start) as the onnx reference has it.
// RotaryEmbedding rotates pairs of the first rotary_embedding_dim channels of every head by the cached
// angles of its position: (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2), the pairs being the two halves
// or, interleaved, the even and odd channels; the channels past the rotary dim pass through. A 4-D input
// [batch, heads, seq, head] is rotated in place (the caches broadcast over heads); a 3-D one [batch, seq,
// heads x head] is split into num_heads heads first and joined after.
#include <algorithm>
#include <limits>
#include <string_view>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

struct Build {
  OnnxGraphReader& b;
  const NodeForm& n;

  ValueId op(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}, const std::string& out = {}) {
    return add(b, n, k, std::move(in), "t", std::move(attrs), out);
  }
  ValueId i64s(const std::vector<int64_t>& v) { return b.constant_i64(n.name + "_i", v); }
  static AttrMap axis(int64_t a) { return one_attr("axis", Attribute{a}); }
  // x[..., start:end:step] on the last axis.
  ValueId last_axis(ValueId x, int64_t start, int64_t end, int64_t step = 1) {
    return op(OpKind::Slice, {x, i64s({start}), i64s({end}), i64s({-1}), i64s({step})});
  }
};

void check_attrs(const NodeForm& n, std::initializer_list<std::string_view> known) {
  for (const auto& [name, a] : n.attrs)
    if (std::find(known.begin(), known.end(), name) == known.end())
      user_error("{}: unknown attribute '{}'", n.desc(), name);
}

void center_crop_pad(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (n.inputs.size() != 2 || !n.has_input(1)) user_error("{}: takes two inputs (input_data, shape)", n.desc());
  check_attrs(n, {"axes"});
  Build c{b, n};
  if (auto t = b.known_dtype(n.inputs[1]); t && *t != DType::i32 && *t != DType::i64)
    user_error("{}: shape is {} (expected int32 or int64)", n.desc(), dtype_name(*t));
  if (auto r = b.known_rank(n.inputs[1]); r && *r != 1) user_error("{}: shape has rank {} (expected 1)", n.desc(), *r);
  const std::optional<int> rank = b.known_rank(n.inputs[0]);
  ValueId axes = kNoValue;
  if (n.attrs.count("axes")) {
    const auto* list = std::get_if<std::vector<int64_t>>(&n.attrs.at("axes").value);
    if (!list || list->empty()) user_error("{}: attribute 'axes' must be a non-empty list of integers", n.desc());
    if (rank) {  // Pad checks them at run time too; here the message can name the node
      std::vector<int64_t> seen;
      for (int64_t a : *list) {
        if (a < -*rank || a >= *rank) user_error("{}: axis {} is out of range for rank {}", n.desc(), a, *rank);
        const int64_t k = a < 0 ? a + *rank : a;
        if (std::count(seen.begin(), seen.end(), k)) user_error("{}: axis {} appears more than once", n.desc(), a);
        seen.push_back(k);
      }
    }
    axes = c.i64s(*list);
  }
  // The sizes of the axes (all of them without 'axes'), then the difference to the target.
  ValueId have = c.op(OpKind::Shape, {n.inputs[0]});
  if (axes != kNoValue) have = c.op(OpKind::Gather, {have, axes}, Build::axis(0));
  ValueId want = cast_to(b, n, n.inputs[1], DType::i64);
  ValueId diff = c.op(OpKind::Sub, {want, have});
  // before = floor(max(diff, 0) / 2) - floor(max(-diff, 0) / 2): centred for a pad and a crop alike.
  ValueId zero = c.i64s({0}), two = c.i64s({2});
  ValueId grow = c.op(OpKind::Max, {diff, zero}), shrink = c.op(OpKind::Max, {c.op(OpKind::Neg, {diff}), zero});
  ValueId before = c.op(OpKind::Sub, {c.op(OpKind::Div, {grow, two}), c.op(OpKind::Div, {shrink, two})});
  ValueId after = c.op(OpKind::Sub, {diff, before});
  ValueId pads = c.op(OpKind::Concat, {before, after}, Build::axis(0));
  std::vector<ValueId> in{n.inputs[0], pads};
  if (axes != kNoValue) in.push_back(kNoValue), in.push_back(axes);
  c.op(OpKind::Pad, std::move(in), {}, n.outputs[0]);
}

void rotary_embedding(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (n.inputs.size() < 3 || n.inputs.size() > 4 || !n.has_input(1) || !n.has_input(2))
    user_error("{}: takes the input, cos_cache, sin_cache and optionally position_ids", n.desc());
  check_attrs(n, {"interleaved", "num_heads", "rotary_embedding_dim"});
  const int64_t interleaved = n.int_attr("interleaved", 0), heads = n.int_attr("num_heads", 0),
                rot = n.int_attr("rotary_embedding_dim", 0);
  if (interleaved != 0 && interleaved != 1) user_error("{}: interleaved {} (expected 0 or 1)", n.desc(), interleaved);
  if (heads < 0) user_error("{}: num_heads {} (expected at least 1)", n.desc(), heads);
  if (rot < 0 || rot % 2) user_error("{}: rotary_embedding_dim {} (expected 0 or an even size)", n.desc(), rot);
  Build c{b, n};
  const ValueId x_in = n.inputs[0];
  const std::optional<int> rank = b.known_rank(x_in);
  if (!rank) unsupported("{}: the input's rank must be known at import (3-D or 4-D)", n.desc());
  if (*rank != 3 && *rank != 4) user_error("{}: the input has rank {} (expected 3 or 4)", n.desc(), *rank);
  if (*rank == 3 && heads == 0) user_error("{}: a 3-D input needs num_heads", n.desc());
  const bool positions = n.has_input(3);
  for (size_t i : {size_t(1), size_t(2)})
    if (auto r = b.known_rank(n.inputs[i]); r && *r != (positions ? 2 : 3))
      user_error("{}: {} has rank {} (expected {}: {})", n.desc(), i == 1 ? "cos_cache" : "sin_cache", *r,
                 positions ? 2 : 3, positions ? "[positions, rotary dim / 2] with position_ids"
                                              : "[batch, seq, rotary dim / 2] without position_ids");
  if (positions)
    if (auto t = b.known_dtype(n.inputs[3]); t && *t != DType::i64)
      user_error("{}: position_ids is {} (expected int64)", n.desc(), dtype_name(*t));

  // x as [batch, heads, seq, head] or [batch, seq, heads, head]; the caches [batch, seq, half] unsqueezed
  // over the heads' axis.
  ValueId x = *rank == 4 ? x_in : c.op(OpKind::Reshape, {x_in, c.i64s({0, 0, heads, -1})});
  const int64_t heads_axis = *rank == 4 ? 1 : 2;
  std::optional<int64_t> head;  // head size, where static
  if (*rank == 4) {
    const Dim& d = b.graph().value(x_in).type.shape[3];
    if (d.is_static()) head = d.value;
  } else if (const Dim& d = b.graph().value(x_in).type.shape[2]; d.is_static()) {
    if (d.value % heads) user_error("{}: hidden size {} is no multiple of num_heads {}", n.desc(), d.value, heads);
    head = d.value / heads;
  }
  if (rot && head && rot > *head) user_error("{}: rotary_embedding_dim {} exceeds the head size {}", n.desc(), rot, *head);
  if (!rot && head && *head % 2) user_error("{}: the head size {} is odd", n.desc(), *head);
  // The half of the rotated channels that each cache row covers: a constant where known, else head / 2.
  ValueId half = rot ? c.i64s({rot / 2}) : head ? c.i64s({*head / 2}) : kNoValue;
  if (half == kNoValue) {
    AttrMap a;
    a["start"] = Attribute{int64_t{-1}};
    half = c.op(OpKind::Div, {c.op(OpKind::Shape, {x}, std::move(a)), c.i64s({2})});
  }
  auto cache = [&](ValueId t) {
    if (positions) t = c.op(OpKind::Gather, {t, n.inputs[3]}, Build::axis(0));
    t = c.op(OpKind::Slice, {t, c.i64s({0}), half, c.i64s({-1})});
    return c.op(OpKind::Unsqueeze, {t, c.i64s({heads_axis})});
  };
  ValueId cos = cache(n.inputs[1]), sin = cache(n.inputs[2]);

  const bool partial = rot && (!head || rot < *head);
  ValueId xr = partial ? c.last_axis(x, 0, rot) : x;
  ValueId x1, x2;
  if (interleaved) {
    x1 = c.last_axis(xr, 0, std::numeric_limits<int64_t>::max(), 2);
    x2 = c.last_axis(xr, 1, std::numeric_limits<int64_t>::max(), 2);
  } else {
    std::vector<std::string> outs{b.unique_name(n.name + "_x1"), b.unique_name(n.name + "_x2")};
    AttrMap a = Build::axis(-1);
    a["num_outputs"] = Attribute{int64_t{2}};
    NodeId id = b.add_node(OpKind::Split, {xr}, outs, b.unique_name(n.name + "_split_node"), std::move(a));
    x1 = b.graph().nodes[size_t(id)].outputs[0], x2 = b.graph().nodes[size_t(id)].outputs[1];
  }
  ValueId real = c.op(OpKind::Sub, {c.op(OpKind::Mul, {cos, x1}), c.op(OpKind::Mul, {sin, x2})});
  ValueId imag = c.op(OpKind::Add, {c.op(OpKind::Mul, {sin, x1}), c.op(OpKind::Mul, {cos, x2})});
  ValueId y;
  if (interleaved) {  // (real, imag) pairs back into consecutive channels
    ValueId pairs = c.op(OpKind::Concat, {c.op(OpKind::Unsqueeze, {real, c.i64s({-1})}),
                                          c.op(OpKind::Unsqueeze, {imag, c.i64s({-1})})},
                         Build::axis(-1));
    y = c.op(OpKind::Reshape, {pairs, c.i64s({0, 0, 0, -1})});
  } else {
    y = c.op(OpKind::Concat, {real, imag}, Build::axis(-1));
  }
  const std::string out = *rank == 4 ? n.outputs[0] : std::string();
  if (partial) y = c.op(OpKind::Concat, {y, c.last_axis(x, rot, std::numeric_limits<int64_t>::max())}, Build::axis(-1), out);
  else if (*rank == 4) y = c.op(OpKind::Identity, {y}, {}, out);
  if (*rank == 3) c.op(OpKind::Reshape, {y, c.op(OpKind::Shape, {x_in})}, {}, n.outputs[0]);
}

constexpr RewriteRow kRows[] = {{"CenterCropPad", center_crop_pad}, {"RotaryEmbedding", rotary_embedding}};

}  // namespace

std::span<const RewriteRow> crop_rotary_rewrites() { return kRows; }

}  // namespace kiln::rewrites
