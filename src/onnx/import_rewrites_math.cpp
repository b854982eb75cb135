// Activations and elementwise functions that kiln reads as their ONNX function bodies over kiln ops:
// Swish, SwiGLU, Gelu, Selu, Celu, ThresholdedRelu, Softsign, Shrink, Mish, Sign, PRelu, Round, the hyperbolic
// and inverse hyperbolic functions and Tan; and Hardmax, LpNormalization, MeanVarianceNormalization,
// GlobalMaxPool and EyeLike over ArgMax, Range and the Reduce ops; the Hann, Hamming and Blackman
// windows over Range and Cos.
#include <cmath>
#include <fmt/format.h>

#include "onnx/import_rewrites.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

// A small builder over one node's rewrite: every value it adds is named after the node.
struct Body {
  OnnxGraphReader& b;
  NodeForm& n;
  ValueId x;

  Body(OnnxGraphReader& reader, NodeForm& node) : b(reader), n(node) {
    need_io(n);
    x = n.inputs[0];
  }
  ValueId c(double v) { return b.scalar_like(n.name + "_c", v, x); }  // a scalar of x's type
  ValueId op(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}) { return add(b, n, k, std::move(in), "t", std::move(attrs)); }
  // The node's output, computed by `k`.
  void out(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}) {
    add(b, n, k, std::move(in), "out", std::move(attrs), n.outputs[0]);
  }
};

void swish(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  double alpha = n.float_attr("alpha", 1.0);
  ValueId s = f.op(OpKind::Sigmoid, {alpha == 1.0 ? f.x : f.op(OpKind::Mul, {f.x, f.c(alpha)})});
  f.out(OpKind::Mul, {f.x, s});
}

// SwiGLU(a, b) = Swish(a, alpha) b, its function body.
void swiglu(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  if (!n.has_input(1)) user_error("{}: input 1 (b) is missing", n.desc());
  double alpha = n.float_attr("alpha", 1.0);
  ValueId s = f.op(OpKind::Sigmoid, {alpha == 1.0 ? f.x : f.op(OpKind::Mul, {f.x, f.c(alpha)})});
  f.out(OpKind::Mul, {f.op(OpKind::Mul, {f.x, s}), n.inputs[1]});
}

// approximate "none": 0.5 x (1 + erf(x / sqrt 2)); "tanh": 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
void gelu(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  std::string approximate = "none";
  if (auto it = n.attrs.find("approximate"); it != n.attrs.end()) {
    const auto* s = std::get_if<std::string>(&it->second.value);
    if (!s) user_error("{}: attribute 'approximate' must be a string", n.desc());
    approximate = *s;
  }
  ValueId inner;
  if (approximate == "none") {
    inner = f.op(OpKind::Erf, {f.op(OpKind::Mul, {f.x, f.c(M_SQRT1_2)})});
  } else if (approximate == "tanh") {
    ValueId cube = f.op(OpKind::Mul, {f.op(OpKind::Mul, {f.x, f.x}), f.x});
    ValueId poly = f.op(OpKind::Add, {f.x, f.op(OpKind::Mul, {cube, f.c(0.044715)})});
    inner = f.op(OpKind::Tanh, {f.op(OpKind::Mul, {poly, f.c(std::sqrt(2.0 / M_PI))})});
  } else {
    user_error("{}: approximate '{}' is not none or tanh", n.desc(), approximate);
  }
  f.out(OpKind::Mul, {f.op(OpKind::Mul, {f.x, f.c(0.5)}), f.op(OpKind::Add, {inner, f.c(1.0)})});
}

void selu(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId elu = f.op(OpKind::Elu, {f.x}, one_attr("alpha", Attribute{n.float_attr("alpha", 1.67326319217681884765625)}));
  f.out(OpKind::Mul, {elu, f.c(n.float_attr("gamma", 1.05070102214813232421875))});
}

// max(0, x) + min(0, alpha (exp(x / alpha) - 1)) = alpha Elu(x / alpha)
void celu(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  double alpha = n.float_attr("alpha", 1.0);
  if (alpha == 0) user_error("{}: alpha must not be 0", n.desc());
  ValueId elu = f.op(OpKind::Elu, {f.op(OpKind::Div, {f.x, f.c(alpha)})});
  f.out(OpKind::Mul, {elu, f.c(alpha)});
}

void thresholded_relu(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  f.out(OpKind::Where, {f.op(OpKind::Greater, {f.x, f.c(n.float_attr("alpha", 1.0))}), f.x, f.c(0)});
}

void softsign(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  f.out(OpKind::Div, {f.x, f.op(OpKind::Add, {f.op(OpKind::Abs, {f.x}), f.c(1)})});
}

// x < -lambd: x + bias; x > lambd: x - bias; else 0
void shrink(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  double bias = n.float_attr("bias", 0.0), lambd = n.float_attr("lambd", 0.5);
  ValueId high = f.op(OpKind::Where, {f.op(OpKind::Greater, {f.x, f.c(lambd)}), f.op(OpKind::Sub, {f.x, f.c(bias)}), f.c(0)});
  f.out(OpKind::Where, {f.op(OpKind::Less, {f.x, f.c(-lambd)}), f.op(OpKind::Add, {f.x, f.c(bias)}), high});
}

void mish(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  f.out(OpKind::Mul, {f.x, f.op(OpKind::Tanh, {f.op(OpKind::Softplus, {f.x})})});
}

void sign(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId negative = f.op(OpKind::Where, {f.op(OpKind::Less, {f.x, f.c(0)}), f.c(-1), f.c(0)});
  f.out(OpKind::Where, {f.op(OpKind::Greater, {f.x, f.c(0)}), f.c(1), negative});
}

// Round half to even from f = floor(x) and d = x - f (both exact): f + 1 when d > 0.5, or when d is
// 0.5 and f is odd. NaN and infinities come out as they went in (their d is NaN).
void round(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  round_half_even(r, n, f.x, n.outputs[0]);
}

// slope broadcasts to x (unidirectionally)
void prelu(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  if (!n.has_input(1)) user_error("{}: input 1 (slope) is missing", n.desc());
  f.out(OpKind::Where, {f.op(OpKind::Less, {f.x, f.c(0)}), f.op(OpKind::Mul, {f.x, n.inputs[1]}), f.x});
}

void tan(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  f.out(OpKind::Div, {f.op(OpKind::Sin, {f.x}), f.op(OpKind::Cos, {f.x})});
}

void sinh(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId d = f.op(OpKind::Sub, {f.op(OpKind::Exp, {f.x}), f.op(OpKind::Exp, {f.op(OpKind::Neg, {f.x})})});
  f.out(OpKind::Mul, {d, f.c(0.5)});
}

void cosh(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId s = f.op(OpKind::Add, {f.op(OpKind::Exp, {f.x}), f.op(OpKind::Exp, {f.op(OpKind::Neg, {f.x})})});
  f.out(OpKind::Mul, {s, f.c(0.5)});
}

// log(x + sqrt(x^2 + 1)), odd: computed on |x| and given x's sign, so that no cancellation occurs.
void asinh(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId a = f.op(OpKind::Abs, {f.x});
  ValueId root = f.op(OpKind::Sqrt, {f.op(OpKind::Add, {f.op(OpKind::Mul, {a, a}), f.c(1)})});
  ValueId v = f.op(OpKind::Log, {f.op(OpKind::Add, {a, root})});
  f.out(OpKind::Where, {f.op(OpKind::Less, {f.x, f.c(0)}), f.op(OpKind::Neg, {v}), v});
}

void acosh(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId root = f.op(OpKind::Sqrt, {f.op(OpKind::Sub, {f.op(OpKind::Mul, {f.x, f.x}), f.c(1)})});
  f.out(OpKind::Log, {f.op(OpKind::Add, {f.x, root})});
}

void atanh(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  ValueId q = f.op(OpKind::Div, {f.op(OpKind::Add, {f.c(1), f.x}), f.op(OpKind::Sub, {f.c(1), f.x})});
  f.out(OpKind::Mul, {f.op(OpKind::Log, {q}), f.c(0.5)});
}

// The axes [from, rank) of x: constants where the rank is known, else Range(from, rank).
ValueId trailing_axes(Body& f, int64_t from) {
  if (auto rank = f.b.known_rank(f.x)) {
    std::vector<int64_t> axes;
    for (int64_t a = from; a < *rank; ++a) axes.push_back(a);
    return f.b.constant_i64(f.n.name + "_axes", axes);
  }
  auto scalar = [&](int64_t v) { return f.b.graph().add_constant(f.b.unique_name(f.n.name + "_i"), Tensor::scalar(DType::i64, v)); };
  return f.op(OpKind::Range, {scalar(from), f.op(OpKind::Size, {f.op(OpKind::Shape, {f.x})}), scalar(1)});
}

void global_max_pool(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  f.out(OpKind::ReduceMax, {f.x, trailing_axes(f, 2)}, one_attr("keepdims", Attribute{int64_t{1}}));
}

// (sum over each window of |x|^p)^(1/p): the AveragePool of |x|^p counting the pads (which add 0)
// times the window's size. ceil_mode is not read: its last windows would count fewer elements.
void lp_pool(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  if (n.int_attr("ceil_mode", 0) != 0) unsupported("{}: ceil_mode 1 is not supported", n.desc());
  auto it = n.attrs.find("kernel_shape");
  const auto* kernel_list = it == n.attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second.value);
  if (!kernel_list || kernel_list->empty()) user_error("{}: attribute 'kernel_shape' (ints) is required", n.desc());
  const std::vector<int64_t>& kernel = *kernel_list;
  double size = 1;
  for (int64_t k : kernel) {
    if (k < 1) user_error("{}: kernel_shape holds {}", n.desc(), k);
    size *= double(k);
  }
  const int64_t p = n.int_attr("p", 2);
  if (p < 1) user_error("{}: p must be at least 1, got {}", n.desc(), p);
  AttrMap pool;
  for (const char* name : {"kernel_shape", "strides", "pads", "dilations", "auto_pad"})
    if (auto it = n.attrs.find(name); it != n.attrs.end()) pool[name] = it->second;
  pool["count_include_pad"] = Attribute{int64_t{1}};
  ValueId powered = f.op(OpKind::Pow, {f.op(OpKind::Abs, {f.x}), f.c(double(p))});
  ValueId sum = f.op(OpKind::Mul, {f.op(OpKind::AveragePool, {powered}, std::move(pool)), f.c(size)});
  f.out(OpKind::Pow, {sum, f.c(1.0 / double(p))});
}

// x / ||x||_p along one axis (p 1 or 2); 0 where the norm is 0, as ONNX's reference gives
void lp_normalization(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  int64_t p = n.int_attr("p", 2), axis = n.int_attr("axis", -1);
  if (p != 1 && p != 2) user_error("{}: p must be 1 or 2, got {}", n.desc(), p);
  ValueId axes = r.constant_i64(n.name + "_axes", {axis});
  AttrMap keep = one_attr("keepdims", Attribute{int64_t{1}});
  ValueId norm = p == 1 ? f.op(OpKind::ReduceSum, {f.op(OpKind::Abs, {f.x}), axes}, keep)
                        : f.op(OpKind::Sqrt, {f.op(OpKind::ReduceSum, {f.op(OpKind::Mul, {f.x, f.x}), axes}, keep)});
  ValueId zero = f.op(OpKind::Equal, {norm, f.c(0)});
  f.out(OpKind::Where, {zero, f.c(0), f.op(OpKind::Div, {f.x, norm})});
}

// (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default 0, 2, 3), as ONNX's function body.
void mean_variance_normalization(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  std::vector<int64_t> list{0, 2, 3};
  if (auto it = n.attrs.find("axes"); it != n.attrs.end()) {
    const auto* v = std::get_if<std::vector<int64_t>>(&it->second.value);
    if (!v) user_error("{}: attribute 'axes' must be a list of integers", n.desc());
    list = *v;
  }
  ValueId axes = r.constant_i64(n.name + "_axes", list);
  AttrMap keep = one_attr("keepdims", Attribute{int64_t{1}});
  ValueId mean = f.op(OpKind::ReduceMean, {f.x, axes}, keep);
  ValueId mean_sq = f.op(OpKind::ReduceMean, {f.op(OpKind::Mul, {f.x, f.x}), axes}, keep);
  ValueId var = f.op(OpKind::Sub, {mean_sq, f.op(OpKind::Mul, {mean, mean})});
  ValueId std = f.op(OpKind::Add, {f.op(OpKind::Sqrt, {var}), f.c(1e-9)});
  f.out(OpKind::Div, {f.op(OpKind::Sub, {f.x, mean}), std});
}

// Ones where column - row == k, of x's 2-D shape, in `dtype` (an ONNX type code) or x's type.
void eye_like(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  auto i64 = [&](int64_t v) { return r.graph().add_constant(r.unique_name(n.name + "_i"), Tensor::scalar(DType::i64, v)); };
  ValueId shape = f.op(OpKind::Shape, {f.x});
  ValueId rows = f.op(OpKind::Range, {i64(0), f.op(OpKind::Gather, {shape, i64(0)}), i64(1)});
  ValueId cols = f.op(OpKind::Range, {i64(0), f.op(OpKind::Gather, {shape, i64(1)}), i64(1)});
  ValueId shifted = f.op(OpKind::Add, {f.op(OpKind::Unsqueeze, {rows, r.constant_i64(n.name + "_axis1", {1})}),
                                       i64(n.int_attr("k", 0))});
  ValueId eye = f.op(OpKind::Equal, {shifted, cols});
  if (n.attrs.count("dtype")) {
    int64_t code = n.int_attr("dtype", 0);
    auto t = code > 0 && code < 64 ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt;
    if (!t) unsupported("{}: dtype {} is not a supported element type", n.desc(), code);
    f.out(OpKind::Cast, {eye}, one_attr("to", Attribute{std::string(dtype_name(*t))}));
  } else {
    f.out(OpKind::CastLike, {eye, f.x});
  }
}

// The generalised cosine windows, as onnx's function body computes them in f32: a0 - a1 cos(t) +
// a2 cos(2 t), t = 2 pi n / N for n in [0, size), N = size (periodic) or size - 1 (symmetric).
void cosine_window(OnnxGraphReader& r, NodeForm& n, float a0, float a1, float a2) {
  Body f(r, n);
  ValueId size = cast_to(r, n, f.x, DType::f32);
  auto c = [&](float v) { return r.scalar_like(n.name + "_c", v, size); };
  const bool periodic = n.int_attr("periodic", 1) != 0;
  ValueId denominator = periodic ? size : f.op(OpKind::Sub, {size, c(1)});
  ValueId increment = f.op(OpKind::Div, {c(6.2831854820251465f), denominator});
  ValueId angle = f.op(OpKind::Mul, {f.op(OpKind::Range, {c(0), size, c(1)}), increment});
  ValueId first = f.op(OpKind::Mul, {c(a1), f.op(OpKind::Cos, {angle})});
  ValueId second = f.op(OpKind::Mul, {c(a2), f.op(OpKind::Cos, {f.op(OpKind::Mul, {angle, c(2)})})});
  ValueId window = f.op(OpKind::Add, {f.op(OpKind::Sub, {c(a0), first}), second});
  const int64_t code = n.int_attr("output_datatype", 1);
  auto t = code > 0 && code < 64 ? dtype_from_onnx(static_cast<int>(code)) : std::nullopt;
  if (!t) unsupported("{}: output_datatype {} is not a supported element type", n.desc(), code);
  f.out(OpKind::Cast, {window}, one_attr("to", Attribute{std::string(dtype_name(*t))}));
}
void hann_window(OnnxGraphReader& r, NodeForm& n) { cosine_window(r, n, 0.5f, 0.5f, 0.f); }
void hamming_window(OnnxGraphReader& r, NodeForm& n) { cosine_window(r, n, 25.f / 46.f, 21.f / 46.f, 0.f); }
void blackman_window(OnnxGraphReader& r, NodeForm& n) { cosine_window(r, n, 0.42f, 0.5f, 0.08f); }

// 1 where x is the first maximum along `axis`, else 0: Equal(iota along the axis, ArgMax).
void hardmax(OnnxGraphReader& r, NodeForm& n) {
  Body f(r, n);
  int64_t axis = n.int_attr("axis", -1);
  if (axis >= 0) {
    auto rank = r.known_rank(f.x);
    if (!rank) unsupported("{}: a non-negative axis needs the input's rank to be declared", n.desc());
    axis -= *rank;
    if (axis >= 0) user_error("{}: axis {} is out of range for rank {}", n.desc(), axis + *rank, *rank);
  }
  AttrMap am;
  am["axis"] = Attribute{axis};
  am["keepdims"] = Attribute{int64_t{1}};
  ValueId arg = f.op(OpKind::ArgMax, {f.x}, std::move(am));
  auto i64 = [&](int64_t v) { return r.graph().add_constant(r.unique_name(n.name + "_i"), Tensor::scalar(DType::i64, v)); };
  ValueId dim = f.op(OpKind::Gather, {f.op(OpKind::Shape, {f.x}), i64(axis)});
  ValueId iota = f.op(OpKind::Range, {i64(0), dim, i64(1)});
  std::vector<int64_t> shape{-1};
  for (int64_t a = axis + 1; a < 0; ++a) shape.push_back(1);
  ValueId column = f.op(OpKind::Reshape, {iota, r.constant_i64(n.name + "_shape", shape)});
  f.out(OpKind::CastLike, {f.op(OpKind::Equal, {column, arg}), f.x});
}

}  // namespace

ValueId round_half_even(OnnxGraphReader& r, const NodeForm& n, ValueId x, const std::string& out) {
  auto c = [&](double v) { return r.scalar_like(n.name + "_c", v, x); };
  auto op = [&](OpKind k, std::vector<ValueId> in) { return add(r, n, k, std::move(in), "round"); };
  ValueId fl = op(OpKind::Floor, {x});
  ValueId d = op(OpKind::Sub, {x, fl});
  ValueId up = op(OpKind::Add, {fl, c(1)});
  ValueId half = op(OpKind::Floor, {op(OpKind::Mul, {fl, c(0.5)})});
  ValueId even = op(OpKind::Equal, {op(OpKind::Sub, {fl, op(OpKind::Add, {half, half})}), c(0)});
  ValueId tie = op(OpKind::Where, {even, fl, up});
  ValueId low = op(OpKind::Where, {op(OpKind::Less, {d, c(0.5)}), fl, tie});
  return add(r, n, OpKind::Where, {op(OpKind::Greater, {d, c(0.5)}), up, low}, "round", {}, out);
}

std::span<const RewriteRow> math_rewrites() {
  static constexpr RewriteRow kRows[] = {
      {"Acosh", acosh},
      {"Asinh", asinh},
      {"Atanh", atanh},
      {"BlackmanWindow", blackman_window},
      {"Celu", celu},
      {"Cosh", cosh},
      {"EyeLike", eye_like},
      {"Gelu", gelu},
      {"GlobalMaxPool", global_max_pool},
      {"HammingWindow", hamming_window},
      {"HannWindow", hann_window},
      {"Hardmax", hardmax},
      {"LpNormalization", lp_normalization},
      {"LpPool", lp_pool},
      {"MeanVarianceNormalization", mean_variance_normalization},
      {"Mish", mish},
      {"PRelu", prelu},
      {"Round", round},
      {"Selu", selu},
      {"Shrink", shrink},
      {"Sign", sign},
      {"Sinh", sinh},
      {"Softsign", softsign},
      {"SwiGLU", swiglu},
      {"Swish", swish},
      {"Tan", tan},
      {"ThresholdedRelu", thresholded_relu},
  };
  return kRows;
}

}  // namespace kiln::rewrites
