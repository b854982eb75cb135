#include "pointwise_cases.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "kiln/builder.h"
#include "pointwise_case_builders.h"
#include "pointwise_reference.h"
#include "support/error.h"

namespace kiln::backend::cuda::testing {
namespace {

using Kind = Tolerance::Kind;

// The bounds of CUDA's functions are the CUDA C++ Programming Guide's (Mathematical Functions appendix,
// full range, no fast math), which count ulps from the correctly rounded result: against the exact value
// that is 0.5 ulp more. An f32 result is compared with the fp64 reference (whose own error is below
// 2^-28 ulp of f32), so it gets that bound; an f64 result also gets 2 ulp for glibc's error in the
// reference. Errors are counted in the format's spacing at the larger magnitude of the two values.
constexpr Tolerance kExact{Kind::exact, 0, "exact"};
constexpr Tolerance kExactValue{Kind::exact_value, 0, "exact (zeros of either sign equal)"};
constexpr Tolerance kRounded{Kind::ulps, 0.5, "correctly rounded IEEE operation: 0.5 ulp"};
constexpr Tolerance kExp32{Kind::ulps, 2.5, "expf 2 ulp from correctly rounded: 2.5 ulp"};
constexpr Tolerance kLog32{Kind::ulps, 1.5, "logf 1 ulp from correctly rounded: 1.5 ulp"};
constexpr Tolerance kTanh32{Kind::ulps, 2.5, "tanhf 2 ulp from correctly rounded: 2.5 ulp"};
constexpr Tolerance kErf32{Kind::ulps, 2.5, "erff 2 ulp from correctly rounded: 2.5 ulp"};
constexpr Tolerance kPow32{Kind::ulps, 4.5, "powf 4 ulp from correctly rounded: 4.5 ulp"};
constexpr Tolerance kCube32{Kind::ulps, 1, "x*x*x in f64 (x*x exact), rounded to f64 then f32: 1 ulp"};
// e = expf(-|x|) within 2.5 ulp (relative 2.5 * 2^-23), then 1 + e, and 1 / (1 + e) or e / (1 + e), one
// rounding each: relative error below 4.75 * 2^-23, at most 9.5 ulp of the result (x >= 0: below 5).
constexpr Tolerance kSigmoid32{Kind::ulps, 10, "expf(-|x|) (2.5 ulp) and three roundings: 10 ulp"};
constexpr Tolerance kExp64{Kind::ulps, 3.5, "exp 1 ulp from correctly rounded, glibc 2: 3.5 ulp"};
constexpr Tolerance kLog64{Kind::ulps, 3.5, "log 1 ulp from correctly rounded, glibc 2: 3.5 ulp"};
constexpr Tolerance kTanh64{Kind::ulps, 3.5, "tanh 1 ulp from correctly rounded, glibc 2: 3.5 ulp"};
constexpr Tolerance kErf64{Kind::ulps, 4.5, "erf 2 ulp from correctly rounded, glibc 2: 4.5 ulp"};
constexpr Tolerance kSigmoid64{Kind::ulps, 10, "exp(-|x|) (1.5 ulp), three roundings, glibc: 10 ulp"};

}  // namespace

namespace builders {

Shape dims(std::initializer_list<Dim> d) { return Shape(d); }

PointwiseCase unary(std::string name, OpKind op, DType t, Tolerance tol) {
  return {std::move(name), [op, t] {
            GraphBuilder b("unary");
            ValueId x = b.input("x", t, dims({kN}));
            b.output(b.op(OpKind::Mul, {b.op(op, {x}), b.scalar(t, 1.0)}), "y");
            return b.build();
          }, tol};
}

PointwiseCase binary(std::string name, OpKind op, DType t, Tolerance tol) {
  return {std::move(name), [op, t] {
            GraphBuilder b("binary");
            ValueId x = b.input("a", t, dims({kN, Dim::fixed(1)}));
            ValueId y = b.input("b", t, dims({Dim::fixed(24)}));
            b.output(b.op(OpKind::Mul, {b.op(op, {x, y}), b.scalar(t, 1.0)}), "y");
            return b.build();
          }, tol};
}

PointwiseCase cast_chain(std::string name, DType from, DType via, DType to) {
  return {std::move(name), [from, via, to] {
            GraphBuilder b("cast");
            ValueId x = b.input("x", from, dims({kN}));
            ValueId v = b.op(OpKind::Cast, {x}, {{"to", std::string(dtype_name(via))}});
            b.output(b.op(OpKind::Cast, {v}, {{"to", std::string(dtype_name(to))}}), "y");
            return b.build();
          }, kExact};
}

}  // namespace builders

namespace {

using namespace builders;

std::vector<PointwiseCase> make_cases() {
  const DType f32 = DType::f32, f64 = DType::f64;
  std::vector<PointwiseCase> cases = {
      unary("neg_f32", OpKind::Neg, f32, kExact),
      unary("abs_f32", OpKind::Abs, f32, kExact),
      unary("relu_f32", OpKind::Relu, f32, kExact),
      unary("abs_i32", OpKind::Abs, DType::i32, kExact),  // abs(INT_MIN) wraps; the Mul by 1 is a load of it
      unary("neg_i64", OpKind::Neg, DType::i64, kExact),
      unary("exp_f32", OpKind::Exp, f32, kExp32),
      unary("log_f32", OpKind::Log, f32, kLog32),
      unary("sqrt_f32", OpKind::Sqrt, f32, kRounded),
      unary("reciprocal_f32", OpKind::Reciprocal, f32, kRounded),
      unary("sigmoid_f32", OpKind::Sigmoid, f32, kSigmoid32),
      unary("tanh_f32", OpKind::Tanh, f32, kTanh32),
      unary("erf_f32", OpKind::Erf, f32, kErf32),
      unary("exp_f64", OpKind::Exp, f64, kExp64),
      unary("log_f64", OpKind::Log, f64, kLog64),
      unary("sqrt_f64", OpKind::Sqrt, f64, kRounded),
      unary("sigmoid_f64", OpKind::Sigmoid, f64, kSigmoid64),
      unary("tanh_f64", OpKind::Tanh, f64, kTanh64),
      unary("erf_f64", OpKind::Erf, f64, kErf64),
      binary("add_f32", OpKind::Add, f32, kRounded),
      binary("sub_f32", OpKind::Sub, f32, kRounded),
      binary("mul_f32", OpKind::Mul, f32, kRounded),
      binary("div_f32", OpKind::Div, f32, kRounded),
      binary("pow_f32", OpKind::Pow, f32, kPow32),
      binary("div_f64", OpKind::Div, f64, kRounded),
      binary("max_f32", OpKind::Max, f32, kExactValue),  // NaN-propagating, unlike fmaxf
      binary("min_f32", OpKind::Min, f32, kExactValue),
      binary("max_f64", OpKind::Max, f64, kExactValue),
  };
  for (double exponent : {2.0, 3.0}) {
    cases.push_back({exponent == 2.0 ? "pow2_f32" : "pow3_f32", [exponent] {
                       GraphBuilder b("pow");
                       ValueId x = b.input("x", DType::f32, dims({kN}));
                       ValueId p = b.op(OpKind::Pow, {x, b.scalar(DType::f32, exponent)});
                       b.output(b.op(OpKind::Mul, {p, b.scalar(DType::f32, 1.0)}), "y");
                       return b.build();
                     }, exponent == 2.0 ? kRounded : kCube32});
  }
  // (a < b && !isnan(a - b)) || a == b: comparisons with NaN are false.
  cases.push_back({"compare_bool", [] {
                     GraphBuilder b("compare");
                     ValueId x = b.input("a", DType::f32, dims({kN, Dim::fixed(1)}));
                     ValueId y = b.input("b", DType::f32, dims({Dim::fixed(24)}));
                     ValueId nan = b.op(OpKind::IsNaN, {b.op(OpKind::Sub, {x, y})});
                     ValueId less = b.op(OpKind::And, {b.op(OpKind::Less, {x, y}), b.op(OpKind::Not, {nan})});
                     b.output(b.op(OpKind::Or, {less, b.op(OpKind::Equal, {x, y})}), "y");
                     return b.build();
                   }, kExact});
  // -where(c, a, -7.5) with c: bool[n, 1] broadcast over a: f32[n, 5], and an inlined scalar.
  cases.push_back({"where_broadcast", [] {
                     GraphBuilder b("where");
                     ValueId c = b.input("c", DType::boolean, dims({kN, Dim::fixed(1)}));
                     ValueId x = b.input("a", DType::f32, dims({kN, Dim::fixed(5)}));
                     b.output(b.op(OpKind::Neg, {b.op(OpKind::Where, {c, x, b.scalar(DType::f32, -7.5)})}), "y");
                     return b.build();
                   }, kExact});
  // Wrapping integer arithmetic: max(a * b - a, b) in i64, min(a + b, -(b - a)) in i32.
  cases.push_back({"int64_arith", [] {
                     GraphBuilder b("i64");
                     ValueId x = b.input("a", DType::i64, dims({kN, Dim::fixed(1)}));
                     ValueId y = b.input("b", DType::i64, dims({Dim::fixed(24)}));
                     ValueId p = b.op(OpKind::Sub, {b.op(OpKind::Mul, {x, y}), x});
                     b.output(b.op(OpKind::Max, {p, y}), "y");
                     return b.build();
                   }, kExact});
  cases.push_back({"int32_arith", [] {
                     GraphBuilder b("i32");
                     ValueId x = b.input("a", DType::i32, dims({kN, Dim::fixed(1)}));
                     ValueId y = b.input("b", DType::i32, dims({Dim::fixed(24)}));
                     ValueId negated = b.op(OpKind::Neg, {b.op(OpKind::Sub, {y, x})});
                     b.output(b.op(OpKind::Min, {b.op(OpKind::Add, {x, y}), negated}), "y");
                     return b.build();
                   }, kExact});
  // Casts between every pair of kinds (float to int at its edges, int narrowing, rounding to f32, to bool).
  // Float to int saturates and NaN gives 0 on every route (kiln's Cast), so no element needs a rule of its own.
  cases.push_back(cast_chain("cast_f32_i32_i64", f32, DType::i32, DType::i64));
  cases.push_back(cast_chain("cast_f64_i64_i32", f64, DType::i64, DType::i32));
  cases.push_back(cast_chain("cast_f64_f32_bool", f64, f32, DType::boolean));
  cases.push_back(cast_chain("cast_i32_f32_f64", DType::i32, f32, f64));
  cases.push_back(cast_chain("cast_i64_f32_f64", DType::i64, f32, f64));
  cases.push_back(cast_chain("cast_bool_i32_f64", DType::boolean, DType::i32, f64));
  cases.push_back(cast_chain("cast_i64_bool_f32", DType::i64, DType::boolean, f32));
  cases.push_back(cast_chain("cast_f32_f64_i32", f32, f64, DType::i32));
  // A Transpose read by index: x[n, 3, 4] -> [4, n, 3], minus b[3], negated.
  cases.push_back({"transpose_sub", [] {
                     GraphBuilder b("transpose");
                     ValueId x = b.input("x", DType::f32, dims({kN, Dim::fixed(3), Dim::fixed(4)}));
                     ValueId y = b.input("b", DType::f32, dims({Dim::fixed(3)}));
                     ValueId t = b.op(OpKind::Transpose, {x}, {{"perm", {2, 0, 1}}});
                     b.output(b.op(OpKind::Neg, {b.op(OpKind::Sub, {t, y})}), "y");
                     return b.build();
                   }, kRounded});
  // Two size symbols: (a[n, m] + b[m]) * 2.
  cases.push_back({"two_symbols", [] {
                     GraphBuilder b("syms");
                     ValueId x = b.input("a", DType::f32, dims({kN, kM}));
                     ValueId y = b.input("b", DType::f32, dims({kM}));
                     b.output(b.op(OpKind::Mul, {b.op(OpKind::Add, {x, y}), b.scalar(DType::f32, 2.0)}), "y");
                     return b.build();
                   }, kRounded});
  // A rank-0 input read at index 0, and a rank-0 output.
  cases.push_back({"scalar_input", [] {
                     GraphBuilder b("scalar");
                     ValueId x = b.input("a", DType::f32, dims({kN}));
                     ValueId s = b.input("s", DType::f32, Shape{});
                     b.output(b.op(OpKind::Mul, {b.op(OpKind::Add, {x, s}), b.scalar(DType::f32, 1.0)}), "y");
                     return b.build();
                   }, kRounded});
  cases.push_back({"rank0_output", [] {
                     GraphBuilder b("rank0");
                     ValueId x = b.input("x", DType::f32, Shape{});
                     b.output(b.op(OpKind::Mul, {b.op(OpKind::Tanh, {x}), b.scalar(DType::f32, 1.0)}), "y");
                     return b.build();
                   }, kTanh32});
  for (PointwiseCase& c : half_pointwise_cases()) cases.push_back(std::move(c));
  return cases;
}

}  // namespace

const std::vector<PointwiseCase>& pointwise_cases() {
  static const std::vector<PointwiseCase> cases = make_cases();
  return cases;
}

BuiltCase build_case(const PointwiseCase& c) {
  BuiltCase built{c.graph(), {}};
  infer_types(built.graph);
  std::vector<schedule::PointwiseGroup> groups = schedule::find_pointwise_groups(built.graph);
  KILN_INTERNAL_CHECK(groups.size() == 1, "case {}: {} pointwise groups, expected one", c.name, groups.size());
  built.group = std::move(groups[0]);
  KILN_INTERNAL_CHECK(built.group.nodes.size() == built.graph.nodes.size(), "case {}: {} of {} nodes fused", c.name,
                      built.group.nodes.size(), built.graph.nodes.size());
  built.group.kernel.name = c.name;
  return built;
}

std::map<std::string, int64_t> symbol_values(int64_t n) { return {{"n", n}, {"m", n == 31 ? 1 : 3}}; }

std::vector<int64_t> symbol_arguments(const schedule::PointwiseGroup& group, const std::vector<Tensor>& inputs) {
  std::vector<int64_t> values;
  for (const schedule::SymbolSource& s : group.symbols) values.push_back(inputs.at(size_t(s.input)).dim(s.dim));
  return values;
}

Comparison compare_to_reference(const PointwiseCase& c, const Tensor& got, const Tensor& want,
                                const std::vector<Tensor>& inputs) {
  Comparison r;
  KILN_INTERNAL_CHECK(got.numel() == want.numel(), "{}: {} elements against {}", c.name, got.numel(), want.numel());
  const DType t = got.dtype();
  auto fail = [&](int64_t i, const std::string& what) {
    if (r.ok) r.failure = fmt::format("{} at element {} of {}: {}", c.name, i, got.numel(), what);
    r.ok = false;
  };
  for (int64_t i = 0; i < got.numel(); ++i, ++r.elements) {
    if (!is_float(t)) {
      const int64_t expected = want.as_int64(i);
      // bool as its byte: a kernel must write 0 or 1
      const int64_t value = t == DType::boolean ? static_cast<const uint8_t*>(got.raw())[i] : got.as_int64(i);
      if (value != expected) fail(i, fmt::format("got {}, want {}", value, expected));
      continue;
    }
    const double g = got.as_double(i);
    const std::optional<double> edge = c.float_edge ? c.float_edge(inputs, i) : std::nullopt;
    const double w = edge ? *edge : want.as_double(i);
    r.edges += edge.has_value();
    if (edge) {  // the value f32 arithmetic gives: exactly
      if (!(g == w || (std::isnan(g) && std::isnan(w))))
        fail(i, fmt::format("got {:a}, want {:a} (an f32 intermediate overflows)", g, w));
      continue;
    }
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) fail(i, fmt::format("got {:a}, want {:a}", g, w));
      continue;
    }
    if (c.tolerance.kind != Tolerance::Kind::ulps) {
      const bool any_zero_sign = c.tolerance.kind == Tolerance::Kind::exact_value;
      const bool same = g == w && (any_zero_sign || std::signbit(g) == std::signbit(w));
      if (!same) fail(i, fmt::format("got {:a}, want {:a} exactly", g, w));
      continue;
    }
    // An fp64 value beyond the format's range must come out as that infinity.
    const double w_rounded = std::fabs(w) >= overflow_threshold(t) ? std::copysign(INFINITY, w) : w;
    if (std::isinf(w_rounded) || std::isinf(g)) {
      if (g != w_rounded) fail(i, fmt::format("got {:a}, want {:a} (fp64 {:a})", g, w_rounded, w));
      continue;
    }
    const double ulp = ulp_at(std::max(std::fabs(g), std::fabs(w)), t), err = std::fabs(g - w);
    const double ulps = err / ulp;
    const double bound = c.tolerance.ulps * ulp + c.tolerance.atol;
    r.max_ulps = std::max(r.max_ulps, ulps);
    if (bound > 0) r.worst = std::max(r.worst, err / bound);
    if (err > bound)
      fail(i, fmt::format("got {:a}, want {:a}: {:.2f} ulp, bound {} ulp + {:a} ({})", g, w, ulps,
                          c.tolerance.ulps, c.tolerance.atol, c.tolerance.why));
  }
  return r;
}

std::string CaseReport::summary() const {
  return fmt::format("{:.3f} ulp largest error seen ({:.3f} of the bound), {} edge elements", max_ulps, worst, edges);
}

CaseReport run_case(const PointwiseCase& c, const BuiltCase& built, const std::function<int64_t(int64_t)>& blocks_of,
                    const std::vector<int64_t>& rows, const KernelRunner& run) {
  CaseReport report;
  for (size_t r = 0; r < rows.size(); ++r) {
    uint64_t seed = 14695981039346656037ull;  // FNV-1a of the name: the same inputs on every machine
    for (char ch : c.name) seed = (seed ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    seed += static_cast<uint64_t>(rows[r]);
    std::vector<Tensor> inputs = make_inputs(built.graph, built.group, symbol_values(rows[r]), seed);
    const Tensor want = reference_group(built.graph, built.group, inputs);
    const std::vector<int64_t> symbols = symbol_arguments(built.group, inputs);
    std::vector<int64_t> grids = {blocks_of(want.numel())};
    if (r + 1 == rows.size() && grids[0] > 3) grids.push_back(3);
    for (int64_t blocks : grids) {
      const std::string where = fmt::format(" ({} rows, {} blocks)", rows[r], blocks);
      const KernelRun got = run(inputs, symbols, built.group.kernel.output.dtype, want.shape(), blocks);
      if (!got.guard_intact) report.failures.push_back(c.name + ": wrote past the output" + where);
      const Comparison cmp = compare_to_reference(c, got.output, want, inputs);
      if (!cmp.ok) report.failures.push_back(cmp.failure + where);
      report.max_ulps = std::max(report.max_ulps, cmp.max_ulps);
      report.worst = std::max(report.worst, cmp.worst);
      report.edges += cmp.edges;
    }
  }
  return report;
}

}  // namespace kiln::backend::cuda::testing
