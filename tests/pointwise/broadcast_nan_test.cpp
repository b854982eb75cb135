// Size-1 dims, broadcasting and NaN/Inf semantics of generated pointwise kernels. All kernels of
// this file are compiled in one compile_kernels call (one compiler run each, in parallel).
#include <cmath>
#include <limits>

#include "pointwise_test_util.h"

namespace kiln::loops::testing {
namespace {

// out[M, 1] = x[M, 1] * 2 + y[1, 1]: an inner dimension of size 1.
PointwiseKernel column_kernel(const Expr& m) {
  PointwiseKernel k;
  k.name = "column";
  k.inputs = {{DType::f32, {m, Expr(1)}}, {DType::f32, {Expr(1), Expr(1)}}};
  k.output = {DType::f32, {m, Expr(1)}};
  k.body = add(mul(load_broadcast(k, 0), f32(2.0)), load_broadcast(k, 1));
  return k;
}

// out[M, 1, N] = a[M, 1, 1] * 1000 + b[1, N]: a size-1 middle dim, both inputs broadcast.
PointwiseKernel outer_sum_kernel(const Expr& m, const Expr& n) {
  PointwiseKernel k;
  k.name = "outer_sum";
  k.inputs = {{DType::f32, {m, Expr(1), Expr(1)}}, {DType::f32, {Expr(1), n}}};
  k.output = {DType::f32, {m, Expr(1), n}};
  k.body = add(mul(load_broadcast(k, 0), f32(1000.0)), load_broadcast(k, 1));
  return k;
}

// scores[B, H, S, S] + mask[B, 1, 1, S] (an attention mask).
constexpr int64_t kHeads = 3;
PointwiseKernel mask_kernel(const Expr& b, const Expr& s) {
  PointwiseKernel k;
  k.name = "add_mask";
  k.inputs = {{DType::f32, {b, Expr(kHeads), s, s}}, {DType::f32, {b, Expr(1), Expr(1), s}}};
  k.output = {DType::f32, {b, Expr(kHeads), s, s}};
  k.body = add(load_broadcast(k, 0), load_broadcast(k, 1));
  return k;
}

// out = isnan(sel) ? max(a, b) : min(a, b), over a rank-1 [N] (the blocked loop).
PointwiseKernel max_min_kernel(const Expr& n) {
  PointwiseKernel k;
  k.name = "max_min";
  k.inputs = {{DType::f32, {n}}, {DType::f32, {n}}, {DType::f32, {n}}};
  k.output = {DType::f32, {n}};
  ScalarExpr a = load_broadcast(k, 0), b = load_broadcast(k, 1), sel = load_broadcast(k, 2);
  k.body = where(is_nan(sel), maximum(a, b), minimum(a, b));
  return k;
}

// A mix of the other operations over f64, i64 and bool:
// out = (n > 0 && !isnan(a)) ? sigmoid(a) : f64(n * n) + relu(-a) + abs(a), with a: f64, n: i64.
PointwiseKernel mixed_kernel(const Expr& n) {
  PointwiseKernel k;
  k.name = "mixed";
  k.inputs = {{DType::f64, {n}}, {DType::i64, {n}}};
  k.output = {DType::f64, {n}};
  ScalarExpr a = load_broadcast(k, 0), i = load_broadcast(k, 1);
  ScalarExpr positive = binary(BinaryOp::Greater, i, constant(0, DType::i64));
  ScalarExpr ok = binary(BinaryOp::And, positive, unary(UnaryOp::Not, is_nan(a)));
  ScalarExpr other = add(add(cast(DType::f64, mul(i, i)), unary(UnaryOp::Relu, unary(UnaryOp::Neg, a))),
                         unary(UnaryOp::Abs, a));
  k.body = where(ok, unary(UnaryOp::Sigmoid, a), other);
  return k;
}

// out = isnan(f) ? p / q : i64(f): integer division and float-to-int casts at their edges (the
// branch not taken is still computed and must not trap).
PointwiseKernel int_kernel(const Expr& n) {
  PointwiseKernel k;
  k.name = "int_ops";
  k.inputs = {{DType::i64, {n}}, {DType::i64, {n}}, {DType::f64, {n}}};
  k.output = {DType::i64, {n}};
  ScalarExpr p = load_broadcast(k, 0), q = load_broadcast(k, 1), f = load_broadcast(k, 2);
  k.body = where(is_nan(f), div(p, q), cast(DType::i64, f));
  return k;
}

class PointwiseKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_ = new TempCache;
    Expr m = Expr::sym("M"), n = Expr::sym("N"), b = Expr::sym("B"), s = Expr::sym("S");
    kernels_ = new std::vector<CompiledKernel>(compile_pointwise(
        {column_kernel(m), outer_sum_kernel(m, n), mask_kernel(b, s), max_min_kernel(n), mixed_kernel(n),
         int_kernel(n)}, *cache_));
  }
  static void TearDownTestSuite() {
    delete kernels_;
    delete cache_;
  }
  static const CompiledKernel& kernel(size_t i) { return kernels_->at(i); }
  static TempCache* cache_;
  static std::vector<CompiledKernel>* kernels_;
};
TempCache* PointwiseKernels::cache_ = nullptr;
std::vector<CompiledKernel>* PointwiseKernels::kernels_ = nullptr;

constexpr float kSentinel = -777.0f;

TEST_F(PointwiseKernels, ColumnOutputStoresEveryRow) {
  for (int64_t m : {1, 5, 40000}) {  // 40000 rows: parallel, still one element per inner loop
    std::vector<float> x(static_cast<size_t>(m)), out(static_cast<size_t>(m) + 1, kSentinel);
    for (int64_t r = 0; r < m; ++r) x[static_cast<size_t>(r)] = static_cast<float>(r);
    float y = 0.25f;
    call(kernel(0), "column", {x.data(), &y}, out.data(), {m});
    for (int64_t r = 0; r < m; ++r) ASSERT_EQ(out[static_cast<size_t>(r)], 2.0f * static_cast<float>(r) + 0.25f) << r;
    EXPECT_EQ(out[static_cast<size_t>(m)], kSentinel) << "wrote past the end";
  }
}

TEST_F(PointwiseKernels, SizeOneMiddleDimAndTwoWayBroadcast) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{3, 7}, {1, 1}, {4, 1}, {1, 9}, {3, 12000}}) {
    std::vector<float> a(static_cast<size_t>(m)), b(static_cast<size_t>(n));
    std::vector<float> out(static_cast<size_t>(m * n) + 1, kSentinel);
    for (int64_t i = 0; i < m; ++i) a[static_cast<size_t>(i)] = static_cast<float>(i + 1);
    for (int64_t j = 0; j < n; ++j) b[static_cast<size_t>(j)] = static_cast<float>(j);
    call(kernel(1), "outer_sum", {a.data(), b.data()}, out.data(), {m, n});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_EQ(out[static_cast<size_t>(i * n + j)], 1000.0f * static_cast<float>(i + 1) + static_cast<float>(j))
            << m << "x" << n << " at " << i << "," << j;
    EXPECT_EQ(out.back(), kSentinel);
  }
}

TEST_F(PointwiseKernels, AttentionMaskBroadcast) {
  const int64_t batch = 2, seq = 5;
  const size_t total = static_cast<size_t>(batch * kHeads * seq * seq);
  std::vector<float> scores(total), mask(static_cast<size_t>(batch * seq)), out(total, kSentinel);
  for (size_t i = 0; i < total; ++i) scores[i] = static_cast<float>(i) * 0.5f;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < seq; ++k)
      mask[static_cast<size_t>(b * seq + k)] = k >= seq - b ? -INFINITY : static_cast<float>(b * 100 + k);
  call(kernel(2), "add_mask", {scores.data(), mask.data()}, out.data(), {batch, seq});
  size_t i = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t q = 0; q < seq; ++q)
        for (int64_t k = 0; k < seq; ++k, ++i)
          ASSERT_EQ(out[i], scores[i] + mask[static_cast<size_t>(b * seq + k)]) << b << "," << h << "," << q << "," << k;
  call(kernel(2), "add_mask", {nullptr, nullptr}, nullptr, {0, 5});  // empty batch: no work
}

TEST_F(PointwiseKernels, MaxMinWhereIsNaNPropagateNaNAndInf) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  const std::vector<float> values = {nan, inf, -inf, 0.0f, -1.5f, 2.0f};
  std::vector<float> a, b, sel;
  for (float sv : {nan, inf, -inf, 1.0f})  // only NaN selects max: isnan(inf) must be false
    for (float x : values)
      for (float y : values) a.push_back(x), b.push_back(y), sel.push_back(sv);
  // Repeat past one 4096-element block so that the blocked rank-1 loop and its tail run too.
  while (a.size() < 5000) {
    size_t k = a.size() % 144;
    a.push_back(a[k]), b.push_back(b[k]), sel.push_back(sel[k]);
  }
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<float> out(a.size() + 1, kSentinel);
  call(kernel(3), "max_min", {a.data(), b.data(), sel.data()}, out.data(), {n});
  for (size_t i = 0; i < a.size(); ++i) {
    bool take_max = std::isnan(sel[i]);
    float want;
    if (std::isnan(a[i]) || std::isnan(b[i])) want = nan;
    else want = take_max ? std::max(a[i], b[i]) : std::min(a[i], b[i]);
    if (std::isnan(want)) ASSERT_TRUE(std::isnan(out[i])) << a[i] << " " << b[i] << " sel " << sel[i];
    else ASSERT_EQ(out[i], want) << a[i] << " " << b[i] << " sel " << sel[i];
  }
  EXPECT_EQ(out.back(), kSentinel);
}

TEST_F(PointwiseKernels, SigmoidCastAndBoolOps) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  std::vector<double> a = {0.0, 1.0, -1.0, 800.0, -800.0, inf, -inf, nan, 3.0, -2.5, nan, 7.0};
  std::vector<int64_t> i = {1, 2, 3, 1, 1, 1, 1, 1, -4, 0, 3, -3000000000};
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<double> out(a.size(), -777.0);
  call(kernel(4), "mixed", {a.data(), i.data()}, out.data(), {n});
  for (size_t k = 0; k < a.size(); ++k) {
    double want;
    if (i[k] > 0 && !std::isnan(a[k])) {
      want = 1.0 / (1.0 + std::exp(-a[k]));  // sigmoid(-800) = 0, sigmoid(800) = 1: no NaN
    } else {
      double relu = -a[k] < 0 ? 0.0 : -a[k];
      want = static_cast<double>(i[k] * i[k]) + relu + std::fabs(a[k]);
    }
    ASSERT_TRUE(same_float(out[k], want, 1e-15)) << "at " << k << ": got " << out[k] << " want " << want;
  }
  EXPECT_EQ(out[4], 0.0);
  EXPECT_EQ(out[6], 0.0);
  EXPECT_EQ(out[3], 1.0);
}

TEST_F(PointwiseKernels, IntegerDivisionAndFloatToIntCastNeverTrap) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t min = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> p = {7, -7, 7, min, 5, 0, 0, 0, 0, 0};
  std::vector<int64_t> q = {2, 2, 0, -1, 0, 0, 0, 0, 0, 0};  // q = 0 also where the cast is taken
  std::vector<double> f = {nan, nan, nan, nan, -2.9, 1e30, -1e30, INFINITY, 9.2e18, nan};
  const int64_t max = std::numeric_limits<int64_t>::max();  // casts saturate as kiln's Cast node kernel
  std::vector<int64_t> want = {3, -3, 0, min, -2, max, min, max, 9200000000000000000, 0};
  std::vector<int64_t> out(p.size(), 42);
  call(kernel(5), "int_ops", {p.data(), q.data(), f.data()}, out.data(), {static_cast<int64_t>(p.size())});
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace kiln::loops::testing
