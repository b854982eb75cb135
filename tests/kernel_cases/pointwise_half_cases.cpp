// The bf16 and f16 pointwise cases: half words in memory, loads widened exactly to f32, the fused chain
// computed in f32 without rounding between its operations, explicit Casts to a half type and the store
// rounded to nearest even (loops/pointwise.h, codegen/cuda/scalar_cuda.h). The fp64 reference evaluates
// the same graph in (nearly) exact arithmetic from the half inputs, so errors are counted in ulps of the
// OUTPUT half type.
#include <cmath>
#include <limits>
#include <optional>

#include "kiln/builder.h"
#include "pointwise_case_builders.h"

namespace kiln::backend::cuda::testing {
namespace {

using namespace builders;
using Kind = Tolerance::Kind;

// The kernel stores g = round(v), v its f32 result; v is within k f32 ulps of the exact w (k: the f32
// chain's error, from CUDA's documented bounds as in pointwise_cases.cpp). An f32 ulp is 2^-13 of an f16
// ulp (24 against 11 significant bits) and 2^-16 of a bf16 one, at every magnitude of the half range
// (in the half subnormals even less), so |g - w| <= 0.5 ulp + k 2^-13 ulp of the half type. A tie that
// v lands on by its error may round either way: that is inside the same bound.
constexpr Tolerance half_bound(double k, const char* why) { return {Kind::ulps, 0.5 + k * 0x1p-13, why}; }

constexpr Tolerance kExact{Kind::exact, 0, "exact"};
constexpr Tolerance kExactValue{Kind::exact_value, 0, "exact (zeros of either sign equal)"};
constexpr Tolerance kHalfOp = half_bound(0.5, "one f32 rounding, then the store's: 0.5 + 2^-14 half ulp");
constexpr Tolerance kHalfExp = half_bound(2.5, "expf 2.5 ulp of f32, then the store: 0.5 + 2.5 * 2^-13 half ulp");
constexpr Tolerance kHalfLog = half_bound(1.5, "logf 1.5 ulp of f32, then the store: 0.5 + 1.5 * 2^-13 half ulp");
constexpr Tolerance kHalfTanh = half_bound(2.5, "tanhf 2.5 ulp of f32, then the store: 0.5 + 2.5 * 2^-13 half ulp");
constexpr Tolerance kHalfErf = half_bound(2.5, "erff 2.5 ulp of f32, then the store: 0.5 + 2.5 * 2^-13 half ulp");
constexpr Tolerance kHalfSigmoid =
    half_bound(10, "kiln_sigmoid 10 ulp of f32 (pointwise_cases.cpp), then the store: 0.5 + 10 * 2^-13 half ulp");
// 0.5 x (1 + erf(x / c)) in f32: for x >= 0 a relative error of a few f32 ulps (k = 8 covers erff's 2.5,
// the rounding of x / c through erf' <= 1.13, and two more roundings). For x < 0, 1 + erff(z) cancels:
// its absolute error is erff's (2.5 ulp of a value in [-1, -0.5]: 2.5 * 2^-24) plus that of z's rounding
// (erf'(z) |z| 2^-24 <= 0.48 * 2^-24), under 3 * 2^-24, times |x| / 2. Where 1 + erff(z) is nonzero in
// f32 (>= 2^-24: |x| below about 5.5) that is below 8.3 * 2^-24; where it is zero the kernel stores -0
// and the exact value is at most as far (erfc falls faster than |x| grows). So 2^-20 absolute on top.
constexpr Tolerance kHalfGeluErf{Kind::ulps, 0.5 + 8 * 0x1p-13,
                                 "f32 chain (8 ulp) and the store: 0.5 + 2^-10 half ulp, plus 2^-20 absolute "
                                 "for x < 0, where 1 + erff(x / c) cancels (3 * 2^-24 absolute, times |x| / 2)",
                                 0x1p-20};
// An f32 output of a half chain: a Cast from a half type to f32 does not round (the half value is an f32
// value already), so the bf16 Exp reaches the f32 store unrounded.
constexpr Tolerance kExpAsF32{Kind::ulps, 2.5, "bf16 Exp unrounded into the f32 output: expf's 2.5 ulp of f32"};

// -(Transpose(x[n, 3, 4]) - b[3]) -> [4, n, 3].
PointwiseCase transpose_sub(std::string name, DType t) {
  return {std::move(name), [t] {
            GraphBuilder b("transpose");
            ValueId x = b.input("x", t, dims({kN, Dim::fixed(3), Dim::fixed(4)}));
            ValueId y = b.input("b", t, dims({Dim::fixed(3)}));
            ValueId tr = b.op(OpKind::Transpose, {x}, {{"perm", {2, 0, 1}}});
            b.output(b.op(OpKind::Neg, {b.op(OpKind::Sub, {tr, y})}), "y");
            return b.build();
          }, kHalfOp};
}

// (a[n, m] + b[m]) * 2: the doubling is exact (where a + b overflows, so does the exact value).
PointwiseCase broadcast_add(std::string name, DType t) {
  return {std::move(name), [t] {
            GraphBuilder b("broadcast");
            ValueId x = b.input("a", t, dims({kN, kM}));
            ValueId y = b.input("b", t, dims({kM}));
            b.output(b.op(OpKind::Mul, {b.op(OpKind::Add, {x, y}), b.scalar(t, 2.0)}), "y");
            return b.build();
          }, kHalfOp};
}

// -where(c, a, -7.5) with c: bool[n, 1] broadcast over a[n, 5]: exact.
PointwiseCase where_broadcast(std::string name, DType t) {
  return {std::move(name), [t] {
            GraphBuilder b("where");
            ValueId c = b.input("c", DType::boolean, dims({kN, Dim::fixed(1)}));
            ValueId x = b.input("a", t, dims({kN, Dim::fixed(5)}));
            b.output(b.op(OpKind::Neg, {b.op(OpKind::Where, {c, x, b.scalar(t, -7.5)})}), "y");
            return b.build();
          }, kExact};
}

// GELU as BERT's exporters write it: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5); the constants are
// half values (sqrt 2 rounds to 1.4140625 in both types), the same in the kernel and the reference.
PointwiseCase gelu_erf(std::string name, DType t) {
  PointwiseCase c{std::move(name), [t] {
                    GraphBuilder b("gelu");
                    ValueId x = b.input("x", t, dims({kN}));
                    ValueId e = b.op(OpKind::Erf, {b.op(OpKind::Div, {x, b.scalar(t, std::sqrt(2.0))})});
                    ValueId p = b.op(OpKind::Mul, {x, b.op(OpKind::Add, {e, b.scalar(t, 1.0)})});
                    b.output(b.op(OpKind::Mul, {p, b.scalar(t, 0.5)}), "y");
                    return b.build();
                  }, kHalfGeluErf};
  // bf16 reaches f32's range: x (1 + erf) = 2x overflows f32 for x >= 2^127 (the bf16 values from
  // 2^127 - 2^102 up), as the unfused graph's bf16 Mul does, though the exact 0.5 * 2x is finite.
  if (t == DType::bf16)
    c.float_edge = [](const std::vector<Tensor>& in, int64_t i) -> std::optional<double> {
      if (in[0].as_double(i) >= 0x1p127) return INFINITY;
      return std::nullopt;
    };
  return c;
}

// Cast(x: f32[n, 24], t) + b: t[24]: an explicit rounding inside the chain (the reference's Cast), then
// one f32 addition of two half values and the store (the Cast fuses: its output has the Add's shape).
PointwiseCase cast_then_add(std::string name, DType t) {
  return {std::move(name), [t] {
            GraphBuilder b("cast_add");
            ValueId x = b.input("a", DType::f32, dims({kN, Dim::fixed(24)}));
            ValueId y = b.input("b", t, dims({Dim::fixed(24)}));
            ValueId narrowed = b.op(OpKind::Cast, {x}, {{"to", std::string(dtype_name(t))}});
            b.output(b.op(OpKind::Add, {narrowed, y}), "y");
            return b.build();
          }, kHalfOp};
}

// Cast(Exp(x: bf16[n]), f32).
PointwiseCase exp_as_f32(std::string name) {
  return {std::move(name), [] {
            GraphBuilder b("exp_f32_out");
            ValueId x = b.input("x", DType::bf16, dims({kN}));
            b.output(b.op(OpKind::Cast, {b.op(OpKind::Exp, {x})}, {{"to", std::string("f32")}}), "y");
            return b.build();
          }, kExpAsF32};
}

}  // namespace

std::vector<PointwiseCase> half_pointwise_cases() {
  std::vector<PointwiseCase> cases;
  for (DType t : {DType::bf16, DType::f16}) {
    const std::string s = std::string("_") + std::string(dtype_name(t));
    std::vector<PointwiseCase> list = {
        unary("relu" + s, OpKind::Relu, t, kExact),
        unary("exp" + s, OpKind::Exp, t, kHalfExp),
        unary("log" + s, OpKind::Log, t, kHalfLog),
        unary("tanh" + s, OpKind::Tanh, t, kHalfTanh),
        unary("erf" + s, OpKind::Erf, t, kHalfErf),
        unary("sigmoid" + s, OpKind::Sigmoid, t, kHalfSigmoid),
        binary("add" + s, OpKind::Add, t, kHalfOp),
        binary("sub" + s, OpKind::Sub, t, kHalfOp),
        binary("mul" + s, OpKind::Mul, t, kHalfOp),
        binary("div" + s, OpKind::Div, t, kHalfOp),
        binary("max" + s, OpKind::Max, t, kExactValue),  // NaN-propagating
        binary("min" + s, OpKind::Min, t, kExactValue),
        where_broadcast("where_broadcast" + s, t),
        transpose_sub("transpose_sub" + s, t),
        broadcast_add("broadcast_add" + s, t),
        gelu_erf("gelu_erf" + s, t),
        cast_then_add("cast_f32_then_add" + s, t),
        // f32 -> half -> f32 (one rounding, NaN, overflow to infinity, f32 values below the half subnormals).
        cast_chain("cast_f32" + s + "_f32", DType::f32, t, DType::f32),
        // f64 and i32 -> half round the exact value once (as kiln's Cast does), not through f32.
        cast_chain("cast_f64" + s + "_f32", DType::f64, t, DType::f32),
        cast_chain("cast_i32" + s + "_f32", DType::i32, t, DType::f32),
        cast_chain("cast" + s + "_bool" + s, t, DType::boolean, t),
    };
    for (PointwiseCase& c : list) cases.push_back(std::move(c));
  }
  const DType bf16 = DType::bf16, f16 = DType::f16;
  cases.push_back(cast_chain("cast_bf16_f16_bf16", bf16, f16, bf16));  // f16's range is narrower, its precision finer
  cases.push_back(cast_chain("cast_f16_bf16_f16", f16, bf16, f16));
  cases.push_back(cast_chain("cast_bf16_i32_i64", bf16, DType::i32, DType::i64));
  cases.push_back(cast_chain("cast_f16_i64_i32", f16, DType::i64, DType::i32));
  cases.push_back(exp_as_f32("exp_bf16_as_f32"));
  return cases;
}

}  // namespace kiln::backend::cuda::testing
