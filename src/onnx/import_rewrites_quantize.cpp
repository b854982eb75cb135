// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on 8- and 16-bit integers, read as their
// float arithmetic in f32, and the integer products MatMulInteger, ConvInteger, QLinearMatMul and
// QLinearConv as MatMul / Conv in i32 of the operands less their zero points (issue 17: quantized graphs
// run; their GEMMs on oneDNN's integer kernels come later):
//   DequantizeLinear: y = (x - zero_point) * scale, in the scale's type (or output_dtype)
//   QuantizeLinear:   y = clamp(round_half_even(x / scale) + zero_point) in the zero point's type (or
//                     output_dtype, else u8)
//   DynamicQuantizeLinear: scale and zero point from min(0, min x) and max(0, max x) over [0, 255]
//   QLinearMatMul / QLinearConv: QuantizeLinear(f32(integer product) * a_scale * b_scale, y_scale, y_zp)
// Scales per tensor (a scalar) or per axis (1-D along `axis`); blocked scales (block_size) and the
// 4-bit and float8 types are not read (unsupported, so a model says why).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>

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
  ValueId along_axis(ValueId param, ValueId x) { return along(param, x, n.int_attr("axis", 1)); }
  ValueId along(ValueId param, ValueId x, int64_t axis) {
    std::optional<int> prank = b.known_rank(param);
    if (prank == 0) return param;
    if (prank && *prank != 1) unsupported("{}: scales of rank {} (blocked) are not supported", n.desc(), *prank);
    std::optional<int> xrank = b.known_rank(x);
    if (!xrank) unsupported("{}: the input's rank must be declared for a scale that may be per axis", n.desc());
    if (axis < -*xrank || axis >= *xrank) {  // no such axis: only a per-tensor scale is valid
      if (prank == 1) user_error("{}: axis {} is out of range for rank {}", n.desc(), axis, *xrank);
      return param;
    }
    std::vector<int64_t> shape(size_t(*xrank), 1);
    shape[size_t(axis < 0 ? axis + *xrank : axis)] = -1;
    return op(OpKind::Reshape, {param, b.constant_i64(n.name + "_axis_shape", shape)});
  }
  // Round half to even of an f32 value, then + zero point, clamped to the integer type's range; `out`
  // names the result.
  ValueId quantize(ValueId scaled, ValueId zero_point_f32, DType to, const std::string& out = {}) {
    ValueId q = round_half_even(b, n, scaled);
    if (zero_point_f32 != kNoValue) q = op(OpKind::Add, {q, zero_point_f32});
    const auto [lo, hi] = to == DType::u8    ? std::pair{0, 255}
                          : to == DType::i8  ? std::pair{-128, 127}
                          : to == DType::u16 ? std::pair{0, 65535}
                                             : std::pair{-32768, 32767};
    return cast(op(OpKind::Clip, {q, f32(lo), f32(hi)}), to, out);
  }
  // x in i32 less input `zp` of the node (when present): a scalar, or 1-D along `axis` of x.
  ValueId minus_zero_point(ValueId x, size_t zp, int64_t axis) {
    ValueId wide = cast(x, DType::i32);
    if (!n.has_input(zp)) return wide;
    return op(OpKind::Sub, {wide, cast(along(n.inputs[zp], x, axis), DType::i32)});
  }
  // A scale in f32, a scalar or 1-D along `axis` of `like`.
  ValueId scale(size_t index, ValueId like, int64_t axis) { return cast(along(n.inputs[index], like, axis), DType::f32); }
};

void check_attributes(const NodeForm& n, std::initializer_list<std::string_view> known) {
  for (const auto& [name, a] : n.attrs)
    if (std::find(known.begin(), known.end(), name) == known.end())
      unsupported("{}: attribute '{}' is not supported", n.desc(), name);
  if (n.int_attr("block_size", 0) != 0) unsupported("{}: blocked scales (block_size) are not supported", n.desc());
}

DType quantized_type(const NodeForm& n, std::optional<DType> t, const char* what, bool sixteen_bit = true) {
  if (!t) unsupported("{}: the {}'s element type must be declared", n.desc(), what);
  const bool eight = *t == DType::u8 || *t == DType::i8, sixteen = *t == DType::u16 || *t == DType::i16;
  if (!eight && !(sixteen_bit && sixteen))
    unsupported("{}: a {} of {} ({} are supported)", n.desc(), what, dtype_name(*t),
                sixteen_bit ? "u8, i8, u16 and i16" : "u8 and i8");
  return *t;
}

void dequantize_linear(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (!n.has_input(1)) user_error("{}: input 1 (x_scale) is missing", n.desc());
  check_attributes(n, {"axis", "block_size", "output_dtype"});
  Quant q{b, n};
  std::optional<DType> xt = b.known_dtype(n.inputs[0]);
  if (xt != DType::i32) quantized_type(n, xt, "input");
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
    to = quantized_type(n, b.known_dtype(n.inputs[2]), "zero point");
  } else if (int64_t code = n.int_attr("output_dtype", 0); code != 0) {
    to = quantized_type(n, code > 0 && code < 64 ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt, "output_dtype");
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
  // Scale and zero point are scalars whatever the model declares: MatMulInteger and ConvInteger, which
  // read them as zero points (quantize_dynamic's form), need their rank before declared types are read.
  for (auto [v, t] : {std::pair{scale, DType::f32}, std::pair{zp, DType::u8}}) {
    b.graph().value(v).type = TensorType{t, {}};
    b.mark_typed(v);
  }
}

void need_inputs(const NodeForm& n, size_t count) {
  need_io(n);
  for (size_t i = 0; i < count; ++i)
    if (!n.has_input(i)) user_error("{}: input {} is missing", n.desc(), i);
}

// Y (i32) = (A - a_zero_point) x (B - b_zero_point): zero points per tensor, per row of A, per column of B.
void matmul_integer(OnnxGraphReader& b, NodeForm& n) {
  need_inputs(n, 2);
  check_attributes(n, {});
  Quant q{b, n};
  quantized_type(n, b.known_dtype(n.inputs[0]), "A", false);
  quantized_type(n, b.known_dtype(n.inputs[1]), "B", false);
  q.op(OpKind::MatMul, {q.minus_zero_point(n.inputs[0], 2, -2), q.minus_zero_point(n.inputs[1], 3, -1)}, {},
       n.outputs[0]);
}

constexpr size_t kNoBias = static_cast<size_t>(-1);

// Conv of the shifted 8-bit operands (plus an i32 bias), in f64: kiln's Conv computes in floats, and
// each product is at most 255^2, so a sum of fewer than 2^53 / 255^2 (~10^11) of them is exact.
ValueId integer_conv(Quant& q, const NodeForm& n, size_t x_zp, size_t w_index, size_t w_zp, size_t bias) {
  std::vector<ValueId> in = {q.cast(q.minus_zero_point(n.inputs[0], x_zp, 1), DType::f64),
                             q.cast(q.minus_zero_point(n.inputs[w_index], w_zp, 0), DType::f64)};
  if (n.has_input(bias)) in.push_back(q.cast(n.inputs[bias], DType::f64));
  AttrMap attrs = n.attrs;
  return q.op(OpKind::Conv, std::move(in), std::move(attrs));
}

// Y (i32) = Conv(x - x_zero_point, w - w_zero_point): the padding is zero after the shift (as the
// zero point before it); w's zero point per tensor or per output channel.
void conv_integer(OnnxGraphReader& b, NodeForm& n) {
  need_inputs(n, 2);
  Quant q{b, n};
  quantized_type(n, b.known_dtype(n.inputs[0]), "x", false);
  quantized_type(n, b.known_dtype(n.inputs[1]), "w", false);
  q.cast(integer_conv(q, n, 2, 1, 3, kNoBias), DType::i32, n.outputs[0]);
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the i32 product of the shifted
// operands, times a_scale (per row) and b_scale (per column), quantized by y_scale and y_zp.
void qlinear_matmul(OnnxGraphReader& b, NodeForm& n) {
  need_inputs(n, 8);
  check_attributes(n, {});
  Quant q{b, n};
  quantized_type(n, b.known_dtype(n.inputs[0]), "a", false);
  quantized_type(n, b.known_dtype(n.inputs[3]), "b", false);
  const DType to = quantized_type(n, b.known_dtype(n.inputs[7]), "y zero point", false);
  const ValueId a = n.inputs[0], bm = n.inputs[3];
  ValueId product = q.op(OpKind::MatMul, {q.minus_zero_point(a, 2, -2), q.minus_zero_point(bm, 5, -1)});
  ValueId real = q.op(OpKind::Mul, {q.op(OpKind::Mul, {q.cast(product, DType::f32), q.scale(1, a, -2)}), q.scale(4, bm, -1)});
  q.quantize(q.op(OpKind::Div, {real, q.cast(n.inputs[6], DType::f32)}), q.cast(n.inputs[7], DType::f32), to,
             n.outputs[0]);
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): the i32 convolution of the shifted
// operands plus B (i32), times x_scale and w_scale (per output channel), quantized by y_scale and y_zp.
void qlinear_conv(OnnxGraphReader& b, NodeForm& n) {
  need_inputs(n, 8);
  Quant q{b, n};
  quantized_type(n, b.known_dtype(n.inputs[0]), "x", false);
  quantized_type(n, b.known_dtype(n.inputs[3]), "w", false);
  const DType to = quantized_type(n, b.known_dtype(n.inputs[7]), "y zero point", false);
  const ValueId x = n.inputs[0];
  if (n.has_input(8) && b.known_dtype(n.inputs[8]) && b.known_dtype(n.inputs[8]) != DType::i32)
    user_error("{}: the bias B must be i32", n.desc());
  ValueId conv = integer_conv(q, n, 2, 3, 5, 8);
  // x_scale per tensor; w_scale per output channel: along axis 1 of the output, whose rank is x's.
  ValueId real = q.op(OpKind::Mul, {q.op(OpKind::Mul, {q.cast(conv, DType::f32), q.cast(n.inputs[1], DType::f32)}), q.scale(4, x, 1)});
  q.quantize(q.op(OpKind::Div, {real, q.cast(n.inputs[6], DType::f32)}), q.cast(n.inputs[7], DType::f32), to,
             n.outputs[0]);
}

}  // namespace

std::span<const RewriteRow> quantize_rewrites() {
  static constexpr RewriteRow kRows[] = {
      {"ConvInteger", conv_integer},
      {"DequantizeLinear", dequantize_linear},
      {"DynamicQuantizeLinear", dynamic_quantize_linear},
      {"MatMulInteger", matmul_integer},
      {"QLinearConv", qlinear_conv},
      {"QLinearMatMul", qlinear_matmul},
      {"QuantizeLinear", quantize_linear},
  };
  return kRows;
}

}  // namespace kiln::rewrites
