// Differential test: every float elementwise op, eager f32 against the fp64 reference path, on random
// inputs with NaN, +-Inf, +-0, tiny and huge values, over scalar, size-1, zero-size, odd and large
// (parallel) shapes, and over the broadcast patterns the fast paths specialise.
#include "elementwise_test_util.h"

namespace kiln::testing_elementwise {
namespace {

using Attrs = std::map<std::string, Attribute, std::less<>>;

struct Case {
  OpKind op;
  double range;  // inputs mostly uniform in [-range, range]
  double rtol;
  double atol;
  Attrs attrs = {};
};

// Tolerances: 1.2e-7 is one f32 ulp (relative); the Sleef-backed and libm functions get a few ulps;
// atol 1e-37 forgives f32 subnormal results. Ops whose result can cancel (HardSwish near -3, sums of
// three values) get an absolute tolerance scaled to the inputs.
const std::vector<Case>& unary_cases() {
  static const std::vector<Case> cases = {
      {OpKind::Abs, 10, 0, 0},
      {OpKind::Neg, 10, 0, 0},
      {OpKind::Sqrt, 100, 1.2e-7, 0},
      {OpKind::Reciprocal, 10, 1.2e-7, 1e-37},
      {OpKind::Exp, 100, 3.6e-7, 1e-37},
      {OpKind::Log, 100, 3.6e-7, 1e-37},
      {OpKind::Erf, 5, 3.6e-7, 1e-37},
      {OpKind::Tanh, 12, 3.6e-7, 1e-37},
      {OpKind::Sigmoid, 30, 6e-7, 1e-37},
      {OpKind::Relu, 10, 0, 0},
      {OpKind::LeakyRelu, 10, 2.4e-7, 1e-37},
      {OpKind::LeakyRelu, 10, 2.4e-7, 1e-37, {{"alpha", Attribute{0.3}}}},
      {OpKind::HardSigmoid, 6, 1e-6, 1e-6},
      {OpKind::HardSigmoid, 6, 1e-6, 1e-6, {{"alpha", Attribute{0.7}}, {"beta", Attribute{0.1}}}},
      {OpKind::HardSwish, 6, 1e-6, 1e-6},
      {OpKind::Floor, 10, 0, 0},
      {OpKind::Ceil, 10, 0, 0},
      {OpKind::Sin, 20, 2.4e-7, 1e-37},
      {OpKind::Cos, 20, 2.4e-7, 1e-37},
      {OpKind::Asin, 2, 2.4e-7, 1e-37},
      {OpKind::Acos, 2, 2.4e-7, 1e-37},
      {OpKind::Atan, 20, 2.4e-7, 1e-37},
      {OpKind::Softplus, 30, 6e-7, 1e-37},
      {OpKind::Elu, 10, 3.6e-7, 1e-37},
      {OpKind::Elu, 10, 3.6e-7, 1e-37, {{"alpha", Attribute{0.5}}}},
      {OpKind::IsNaN, 10, 0, 0},
      {OpKind::IsInf, 10, 0, 0},
      {OpKind::IsInf, 10, 0, 0, {{"detect_positive", Attribute{int64_t{0}}}}},
  };
  return cases;
}

const std::vector<Case>& binary_cases() {
  static const std::vector<Case> cases = {
      {OpKind::Add, 10, 1.2e-7, 1e-37},
      {OpKind::Sub, 10, 1.2e-7, 1e-37},
      {OpKind::Mul, 10, 1.2e-7, 1e-37},
      {OpKind::Div, 10, 1.2e-7, 1e-37},
      {OpKind::Pow, 4, 6e-7, 1e-37},
      {OpKind::Mod, 10, 2.4e-7, 1e-37},
      {OpKind::Mod, 10, 0, 0, {{"fmod", Attribute{int64_t{1}}}}},
      {OpKind::Min, 10, 0, 0},
      {OpKind::Max, 10, 0, 0},
      {OpKind::Sum, 10, 1.2e-7, 1e-37},
      {OpKind::Mean, 10, 1.2e-7, 1e-37},
      {OpKind::Equal, 3, 0, 0},
      {OpKind::Less, 10, 0, 0},
      {OpKind::Greater, 10, 0, 0},
      {OpKind::LessOrEqual, 10, 0, 0},
      {OpKind::GreaterOrEqual, 10, 0, 0},
  };
  return cases;
}

std::string describe(const Case& c) {
  std::string s(op_name(c.op));
  for (const auto& [k, v] : c.attrs) s += " " + k;
  return s;
}

void expect_matches(const Case& c, const Tensor& got, const Tensor& ref, const std::string& where) {
  if (ref.dtype() == DType::boolean) {
    ASSERT_EQ(got.dtype(), DType::boolean) << where;
    ASSERT_EQ(ints(got), ints(ref)) << where;
    return;
  }
  ASSERT_EQ(got.dtype(), DType::f32) << where;
  ASSERT_EQ(ref.dtype(), DType::f64) << where;
  ASSERT_TRUE(close_to_reference(got, ref, c.rtol, c.atol)) << where;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_text(const std::vector<int64_t>& s) { return f32(s, {}).shape_string(); }

TEST(Differential, UnaryOps) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {7}, {3, 1, 5}, {2, 0, 3}, {100003}};
  std::mt19937 rng(1234);
  for (const Case& c : unary_cases()) {
    Node node = make_node(c.op, 1, c.attrs);
    for (const auto& shape : shapes) {
      Tensor x = f32(shape, random_values(rng, numel(shape), c.range));
      expect_matches(c, run(node, {&x}), run_reference(node, {&x}), describe(c) + " " + shape_text(shape));
    }
  }
}

TEST(Differential, ClipWithRandomBounds) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 6; ++trial) {
    Tensor x = f32({1001}, random_values(rng, 1001, 10));
    auto b = random_values(rng, 2, 5, false);
    Tensor lo = f32({}, {std::min(b[0], b[1])}), hi = f32({}, {std::max(b[0], b[1])});
    std::vector<bool> present = {true, trial % 3 != 1, trial % 3 != 2};
    Node node = make_node(OpKind::Clip, 3, {}, present);
    std::vector<const Tensor*> in = {&x, present[1] ? &lo : nullptr, present[2] ? &hi : nullptr};
    Tensor got = run(node, in), ref = run_reference(node, in);
    ASSERT_TRUE(close_to_reference(got, ref, 0, 0)) << trial;
  }
}

// Shape pairs covering same-shape, scalar, [1], row vector, column, mask, both-sided and zero-size
// broadcasts, odd sizes, and sizes big enough to be split across threads.
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& shape_pairs() {
  static const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = {
      {{2, 3, 4}, {3, 1}},       {{2, 3, 4}, {1}},           {{2, 3, 4}, {}},
      {{}, {2, 3, 4}},           {{}, {}},                   {{1}, {1}},
      {{5, 1, 7}, {1, 6, 1}},    {{0, 3}, {1, 3}},           {{7, 0}, {}},
      {{65537}, {65537}},        {{301, 257}, {257}},        {{2, 3, 33, 33}, {2, 1, 1, 33}},
      {{97, 1}, {97, 701}},      {{3, 70001}, {3, 1}},
  };
  return pairs;
}

TEST(Differential, BinaryOps) {
  std::mt19937 rng(4321);
  for (const Case& c : binary_cases()) {
    Node node = make_node(c.op, 2, c.attrs);
    for (const auto& [sa, sb] : shape_pairs()) {
      Tensor a = f32(sa, random_values(rng, numel(sa), c.range));
      Tensor b = f32(sb, random_values(rng, numel(sb), c.range));
      std::string where = describe(c) + " " + shape_text(sa) + " " + shape_text(sb);
      expect_matches(c, run(node, {&a, &b}), run_reference(node, {&a, &b}), where);
    }
  }
}

TEST(Differential, VariadicAndWhere) {
  std::mt19937 rng(777);
  const std::vector<std::vector<std::vector<int64_t>>> triples = {
      {{2, 3, 4}, {3, 1}, {}}, {{1}, {5, 1}, {1, 9}}, {{0, 2}, {2}, {1, 1}}, {{40000, 3}, {3}, {40000, 1}}};
  for (OpKind op : {OpKind::Sum, OpKind::Mean, OpKind::Min, OpKind::Max}) {
    Node node = make_node(op, 3);
    for (const auto& t : triples) {
      Tensor a = f32(t[0], random_values(rng, numel(t[0]), 10));
      Tensor b = f32(t[1], random_values(rng, numel(t[1]), 10));
      Tensor c = f32(t[2], random_values(rng, numel(t[2]), 10));
      // Three-term sums can cancel, so their error is measured against the inputs' scale.
      bool sum = op == OpKind::Sum || op == OpKind::Mean;
      Case k{op, 10, sum ? 4.8e-7 : 0.0, sum ? 1e-5 : 0.0};
      expect_matches(k, run(node, {&a, &b, &c}), run_reference(node, {&a, &b, &c}), std::string(op_name(op)));
    }
  }
  Node where = make_node(OpKind::Where, 3);
  for (const auto& t : triples) {
    std::vector<int> cond(static_cast<size_t>(numel(t[0])));
    for (auto& v : cond) v = static_cast<int>(rng() & 1);
    Tensor c = boolean(t[0], cond);
    Tensor x = f32(t[1], random_values(rng, numel(t[1]), 10));
    Tensor y = f32(t[2], random_values(rng, numel(t[2]), 10));
    Tensor got = run(where, {&c, &x, &y}), ref = run_reference(where, {&c, &x, &y});
    ASSERT_TRUE(close_to_reference(got, ref, 0, 0));
  }
}

TEST(Differential, PowConstantExponents) {
  // Scalar exponents 2 and 3 take eager fast paths (x*x, x*x*x); 0.5 and -1 the general one.
  std::mt19937 rng(5);
  Tensor x = f32({10007}, random_values(rng, 10007, 1e4));
  for (double e : {2.0, 3.0, 0.5, -1.0, 0.0}) {
    Tensor ex = f32({}, {e});
    Node node = make_node(OpKind::Pow, 2);
    ASSERT_TRUE(close_to_reference(run(node, {&x, &ex}), run_reference(node, {&x, &ex}), 2.4e-7, 1e-37)) << e;
  }
}

}  // namespace
}  // namespace kiln::testing_elementwise
