// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on 8-bit integers, read as their float
// arithmetic in f32 (issue 17: quantized graphs run, their integer GEMMs come later):
//   DequantizeLinear: y = (x - zero_point) * scale, in the scale's type (or output_dtype)
//   QuantizeLinear:   y = clamp(round_half_even(x / scale) + zero_point) in the zero point's type (or
//                     output_dtype, else u8)
//   DynamicQuantizeLinear: scale and zero point from min(0, min x) and max(0, max x) over [0, 255]
// Scales per tensor (a scalar) or per axis (1-D along `axis`); blocked scales (block_size) and the
// 4-bit, 16-bit and float8 types are not read (unsupported, so a model says why).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>

#include "onnx/import_rewrites.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

struct Quant {
  OnnxGraphReader& b;
  const NodeForm& n;

  ValueId op(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}, const std::string& out = {}) {
    return add(b, n, k, std::move(in), "q", std::move(attrs), out);
  }
  ValueId f32(double v) {
    return b.graph().add_constant(b.unique_name(n.name + "_c"), Tensor::scalar(DType::f32, static_cast<float>(v)));
  }
  ValueId cast(ValueId x, DType to, const std::string& out = {}) { return cast_to(b, n, x, to, out); }
  // A scale or zero point shaped to broadcast against x: as it is when a scalar, else along `axis`.
  // (A scalar reshaped so is the same scalar: the rank of `param` need not be known.)
  ValueId along_axis(ValueId param, ValueId x) {
    std::optional<int> prank = b.known_rank(param);
    if (prank == 0) return param;
    if (prank && *prank != 1) unsupported("{}: scales of rank {} (blocked) are not supported", n.desc(), *prank);
    std::optional<int> xrank = b.known_rank(x);
    if (!xrank) unsupported("{}: the input's rank must be declared for a scale that may be per axis", n.desc());
    const int64_t axis = n.int_attr("axis", 1);
    if (axis < -*xrank || axis >= *xrank) {  // no such axis: only a per-tensor scale is valid
      if (prank == 1) user_error("{}: axis {} is out of range for rank {}", n.desc(), axis, *xrank);
      return param;
    }
    std::vector<int64_t> shape(size_t(*xrank), 1);
    shape[size_t(axis < 0 ? axis + *xrank : axis)] = -1;
    return op(OpKind::Reshape, {param, b.constant_i64(n.name + "_axis_shape", shape)});
  }
  // Round half to even of an f32 value, then + zero point, clamped to the 8-bit type's range; `out`
  // names the result.
  ValueId quantize(ValueId scaled, ValueId zero_point_f32, DType to, const std::string& out = {}) {
    ValueId q = round_half_even(b, n, scaled);
    if (zero_point_f32 != kNoValue) q = op(OpKind::Add, {q, zero_point_f32});
    const bool u8 = to == DType::u8;
    return cast(op(OpKind::Clip, {q, f32(u8 ? 0 : -128), f32(u8 ? 255 : 127)}), to, out);
  }
};

void check_attributes(const NodeForm& n, std::initializer_list<std::string_view> known) {
  for (const auto& [name, a] : n.attrs)
    if (std::find(known.begin(), known.end(), name) == known.end())
      unsupported("{}: attribute '{}' is not supported", n.desc(), name);
  if (n.int_attr("block_size", 0) != 0) unsupported("{}: blocked scales (block_size) are not supported", n.desc());
}

DType eight_bit(const NodeForm& n, std::optional<DType> t, const char* what) {
  if (!t) unsupported("{}: the {}'s element type must be declared", n.desc(), what);
  if (*t != DType::u8 && *t != DType::i8)
    unsupported("{}: a {} of {} (u8 and i8 are supported)", n.desc(), what, dtype_name(*t));
  return *t;
}

void dequantize_linear(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (x_scale) is missing", n.desc());
  check_attributes(n, {"axis", "block_size", "output_dtype"});
  Quant q{b, n};
  std::optional<DType> xt = b.known_dtype(n.inputs[0]);
  if (xt != DType::i32) eight_bit(n, xt, "input");
  ValueId x = q.cast(n.inputs[0], DType::f32);
  if (n.has_input(2)) x = q.op(OpKind::Sub, {x, q.cast(q.along_axis(n.inputs[2], n.inputs[0]), DType::f32)});
  ValueId y = q.op(OpKind::Mul, {x, q.cast(q.along_axis(n.inputs[1], n.inputs[0]), DType::f32)});
  if (int64_t code = n.int_attr("output_dtype", 0); code != 0) {
    std::optional<DType> to = code > 0 && code < 64 ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt;
    if (!to || !is_f32_or_half(*to)) unsupported("{}: output_dtype {} is not supported", n.desc(), code);
    q.cast(y, *to, n.outputs[0]);
  } else {
    q.op(OpKind::CastLike, {y, n.inputs[1]}, {}, n.outputs[0]);
  }
}

void quantize_linear(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (y_scale) is missing", n.desc());
  check_attributes(n, {"axis", "block_size", "output_dtype", "saturate", "precision"});
  if (n.int_attr("precision", 0) != 0) unsupported("{}: attribute precision is not supported", n.desc());
  Quant q{b, n};
  DType to = DType::u8;
  if (n.has_input(2)) {
    to = eight_bit(n, b.known_dtype(n.inputs[2]), "zero point");
  } else if (int64_t code = n.int_attr("output_dtype", 0); code != 0) {
    to = eight_bit(n, code > 0 && code < 64 ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt, "output_dtype");
  }
  ValueId scaled = q.op(OpKind::Div, {q.cast(n.inputs[0], DType::f32), q.cast(q.along_axis(n.inputs[1], n.inputs[0]), DType::f32)});
  ValueId zp = n.has_input(2) ? q.cast(q.along_axis(n.inputs[2], n.inputs[0]), DType::f32) : kNoValue;
  q.quantize(scaled, zp, to, n.outputs[0]);
}

void dynamic_quantize_linear(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  check_attributes(n, {});
  Quant q{b, n};
  const AttrMap all = one_attr("keepdims", Attribute{int64_t{0}});
  ValueId x = q.cast(n.inputs[0], DType::f32);
  ValueId lo = q.op(OpKind::Min, {q.op(OpKind::ReduceMin, {x}, all), q.f32(0)});
  ValueId hi = q.op(OpKind::Max, {q.op(OpKind::ReduceMax, {x}, all), q.f32(0)});
  ValueId scale = q.op(OpKind::Div, {q.op(OpKind::Sub, {hi, lo}), q.f32(255)}, {},
                       n.has_output(1) ? n.outputs[1] : std::string());
  // The zero point: round(0 - lo / scale), clamped to [0, 255].
  ValueId zp = q.quantize(q.op(OpKind::Sub, {q.f32(0), q.op(OpKind::Div, {lo, scale})}), kNoValue, DType::u8,
                         n.has_output(2) ? n.outputs[2] : std::string());
  q.quantize(q.op(OpKind::Div, {x, scale}), q.cast(zp, DType::f32), DType::u8, n.outputs[0]);
}

}  // namespace

std::span<const RewriteRow> quantize_rewrites() {
  static constexpr RewriteRow kRows[] = {
      {"DequantizeLinear", dequantize_linear},
      {"DynamicQuantizeLinear", dynamic_quantize_linear},
      {"QuantizeLinear", quantize_linear},
  };
  return kRows;
}

}  // namespace kiln::rewrites
