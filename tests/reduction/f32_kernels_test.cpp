// The f32 building blocks directly: the vector exp's accuracy, and both implementations (AVX-512 and
// generic) against double-precision answers on every tail length.
#include <chrono>
#include <cmath>
#include <cstring>

#include "ops/reduction/f32_kernels.h"
#include "reduction_test_util.h"

namespace kiln::test {
namespace {

std::vector<const F32Kernels*> implementations() {
  std::vector<const F32Kernels*> v{&f32_kernels_generic()};
  if (const F32Kernels* k = f32_kernels_avx512()) v.push_back(k);
  return v;
}

// Distance in units in the last place between two finite floats of the same sign (or zero).
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

TEST(F32Kernels, ExpAccuracy) {
  // Every 97th float (by bit pattern) in [-104, 88.8]: about 22 million points.
  for (const F32Kernels* k : implementations()) {
    std::vector<float> x, y;
    auto add_range = [&](float lo, float hi, int stride) {
      int32_t a, b;
      std::memcpy(&a, &lo, 4);
      std::memcpy(&b, &hi, 4);
      if (a > b) std::swap(a, b);
      for (int32_t i = a; i <= b; i += stride) {
        float f;
        std::memcpy(&f, &i, 4);
        x.push_back(f);
      }
    };
    add_range(0.0f, 88.8f, 97);      // positive
    add_range(-0.0f, -104.0f, 97);   // negative (bit patterns increase toward -104)
    y.resize(x.size());
    k->exp(x.data(), y.data(), static_cast<int64_t>(x.size()));
    int64_t worst_normal = 0;
    double worst_sub = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double want = std::exp(static_cast<double>(x[i]));
      float want_f = static_cast<float>(want);
      if (std::isinf(want_f)) {
        EXPECT_TRUE(std::isinf(y[i]) || ulp_distance(y[i], std::numeric_limits<float>::max()) <= 1) << x[i];
      } else if (want_f >= std::numeric_limits<float>::min()) {
        worst_normal = std::max(worst_normal, ulp_distance(y[i], want_f));
      } else {
        worst_sub = std::max(worst_sub, std::fabs(y[i] - want) / std::numeric_limits<float>::denorm_min());
      }
    }
    std::printf("[ measured ] exp (%s): max error %lld ulp (normal results), %.2f x 2^-149 (subnormal), %zu points\n",
                k->name, static_cast<long long>(worst_normal), worst_sub, x.size());
    EXPECT_LE(worst_normal, 2) << k->name;
    EXPECT_LE(worst_sub, 1.0) << k->name;
    // Special values.
    float sx[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 89.0f, -105.0f, 88.72f, -87.0f, 1.0f};
    float sy[10];
    k->exp(sx, sy, 10);
    EXPECT_TRUE(std::isnan(sy[0]));
    EXPECT_EQ(sy[1], 0.0f);
    EXPECT_EQ(sy[2], INFINITY);
    EXPECT_EQ(sy[3], 1.0f);
    EXPECT_EQ(sy[4], 1.0f);
    EXPECT_EQ(sy[5], INFINITY);
    EXPECT_EQ(sy[6], 0.0f);
    EXPECT_LE(ulp_distance(sy[7], std::exp(88.72f)), 2);
    EXPECT_LE(ulp_distance(sy[8], std::exp(-87.0f)), 2);
    EXPECT_LE(ulp_distance(sy[9], static_cast<float>(M_E)), 1);
  }
}

TEST(F32Kernels, RowsAndColumnsEveryTail) {
  std::mt19937 rng(9);
  for (const F32Kernels* k : implementations()) {
    for (int64_t n : {0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000}) {
      Tensor xt = random_f32({n + 1}, rng, -5, 5);
      const float* x = xt.data<float>();
      double sum = 0, mx = -INFINITY, mn = INFINITY, abs_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        sum += x[i];
        abs_sum += std::fabs(x[i]);
        mx = std::max<double>(mx, x[i]);
        mn = std::min<double>(mn, x[i]);
      }
      std::string what = std::string(k->name) + " n=" + std::to_string(n);
      EXPECT_NEAR(k->row_sum(x, n), sum, 1e-6 * abs_sum + 1e-30) << what;
      EXPECT_EQ(k->row_max(x, n), mx) << what;
      EXPECT_EQ(k->row_min(x, n), mn) << what;
      // exp-sum with and without storing; the element past n must stay untouched.
      std::vector<float> y(static_cast<size_t>(n + 1), 42.0f);
      double esum = 0;
      for (int64_t i = 0; i < n; ++i) esum += std::exp(static_cast<double>(x[i]) - 1.5);
      EXPECT_NEAR(k->row_exp_sum(x, y.data(), n, 1.5f), esum, 1e-6 * esum + 1e-30) << what;
      EXPECT_NEAR(k->row_exp_sum(x, nullptr, n, 1.5f), esum, 1e-6 * esum + 1e-30) << what;
      EXPECT_EQ(y[static_cast<size_t>(n)], 42.0f) << what;
      for (int64_t i = 0; i < n; ++i) {
        double e = std::exp(static_cast<double>(x[i] - 1.5f));  // the f32 subtraction the kernel does
        ASSERT_NEAR(y[static_cast<size_t>(i)], e, 2.5e-7 * e) << what;
      }
      // Column steps.
      std::vector<float> acc(static_cast<size_t>(n + 1), 1.0f), want(acc);
      k->col_add(acc.data(), x, n);
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] += x[i];
      EXPECT_EQ(acc, want) << what;
      k->col_max(acc.data(), x, n);
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = std::max(want[static_cast<size_t>(i)], x[i]);
      EXPECT_EQ(acc, want) << what;
      k->col_min(acc.data(), x, n);
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = std::min(want[static_cast<size_t>(i)], x[i]);
      EXPECT_EQ(acc, want) << what;
      // Elementwise steps: each must write exactly [0, n).
      std::vector<float> shift(static_cast<size_t>(n + 1), 0.5f), colsum(static_cast<size_t>(n + 1), 1.0f);
      std::vector<float> out(static_cast<size_t>(n + 1), 9.0f);
      k->col_exp_sum(x, shift.data(), out.data(), colsum.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        double e = std::exp(static_cast<double>(x[i] - 0.5f));
        ASSERT_NEAR(out[static_cast<size_t>(i)], e, 2.5e-7 * e) << what;
        ASSERT_NEAR(colsum[static_cast<size_t>(i)], 1 + e, 2.5e-7 * (1 + e)) << what;
      }
      EXPECT_EQ(out[static_cast<size_t>(n)], 9.0f);
      EXPECT_EQ(colsum[static_cast<size_t>(n)], 1.0f);
      k->col_mul(out.data(), shift.data(), n);  // out *= 0.5
      k->row_scale(out.data(), n, 4.0f);        // out *= 4
      for (int64_t i = 0; i < n; ++i) {
        double e = std::exp(static_cast<double>(x[i] - 0.5f)) * 2;
        ASSERT_NEAR(out[static_cast<size_t>(i)], e, 2.5e-7 * e) << what;
      }
      k->col_sub2(x, shift.data(), colsum.data(), out.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(out[static_cast<size_t>(i)], (x[i] - 0.5f) - colsum[static_cast<size_t>(i)]) << what;
      k->row_sub2(x, out.data(), n, 0.25f, 2.0f);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], (x[i] - 0.25f) - 2.0f) << what;
      k->row_affine(x, out.data(), n, 0.25f, 3.0f, -1.0f);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(out[static_cast<size_t>(i)], (x[i] - 0.25) * 3 - 1, 1e-6 * (1 + std::fabs(x[i] * 3))) << what;
      EXPECT_EQ(out[static_cast<size_t>(n)], 9.0f);
      // LayerNorm row against double.
      if (n > 0) {
        std::vector<float> sc(static_cast<size_t>(n), 1.25f), b(static_cast<size_t>(n), -0.5f);
        std::fill(out.begin(), out.end(), 7.0f);
        float m, inv;
        k->layernorm_row(x, out.data(), n, sc.data(), b.data(), 1e-5f, &m, &inv);
        double dm = sum / static_cast<double>(n), q = 0;
        for (int64_t i = 0; i < n; ++i) q += (x[i] - dm) * (x[i] - dm);
        double dinv = 1 / std::sqrt(q / static_cast<double>(n) + 1e-5);
        EXPECT_NEAR(m, dm, 1e-6) << what;
        EXPECT_NEAR(inv, dinv, 1e-5 * dinv) << what;
        for (int64_t i = 0; i < n; ++i)
          ASSERT_NEAR(out[static_cast<size_t>(i)], (x[i] - dm) * dinv * 1.25 - 0.5, 2e-5) << what << " i=" << i;
        EXPECT_EQ(out[static_cast<size_t>(n)], 7.0f) << what;
      }
    }
    // n = 0 touches no memory at all (null pointers are fine).
    EXPECT_EQ(k->row_sum(nullptr, 0), 0.0f);
    EXPECT_EQ(k->row_max(nullptr, 0), -INFINITY);
    k->col_add(nullptr, nullptr, 0);
    k->row_scale(nullptr, 0, 2.0f);
  }
}

TEST(F32Kernels, NanIsSticky) {
  for (const F32Kernels* k : implementations()) {
    for (int64_t n : {1, 5, 16, 40, 70}) {
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        std::vector<float> x(static_cast<size_t>(n), 1.0f);
        x[static_cast<size_t>(at)] = NAN;
        EXPECT_TRUE(std::isnan(k->row_max(x.data(), n))) << k->name << n << "@" << at;
        EXPECT_TRUE(std::isnan(k->row_min(x.data(), n))) << k->name << n << "@" << at;
        EXPECT_TRUE(std::isnan(k->row_sum(x.data(), n))) << k->name << n << "@" << at;
        // A NaN accumulator stays NaN; a NaN input replaces the accumulator.
        std::vector<float> acc(static_cast<size_t>(n), NAN), ones(static_cast<size_t>(n), 5.0f);
        k->col_max(acc.data(), ones.data(), n);
        k->col_min(acc.data(), ones.data(), n);
        for (float v : acc) EXPECT_TRUE(std::isnan(v)) << k->name;
        std::vector<float> acc2(static_cast<size_t>(n), 0.0f);
        k->col_max(acc2.data(), x.data(), n);
        EXPECT_TRUE(std::isnan(acc2[static_cast<size_t>(at)])) << k->name;
      }
    }
  }
}

// Timings of the hot shapes (not run by default: --gtest_also_run_disabled_tests).
TEST(F32Kernels, DISABLED_Benchmark) {
  std::mt19937 rng(1);
  auto time_node = [](const Node& n, const std::vector<const Tensor*>& in, const char* what) {
    NodeRunOptions o;
    run_node(n, in, o);
    int reps = 200;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) run_node(n, in, o);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf("[ bench ] %-44s %9.1f us\n", what, us);
  };
  Tensor att = random_f32({1, 12, 128, 128}, rng);
  time_node(make_node(OpKind::Softmax, 1), {&att}, "Softmax [1,12,128,128] axis -1");
  time_node(make_node(OpKind::LogSoftmax, 1), {&att}, "LogSoftmax [1,12,128,128] axis -1");
  Node s1 = make_node(OpKind::Softmax, 1);
  set_int(s1, "axis", 2);
  time_node(s1, {&att}, "Softmax [1,12,128,128] axis 2");
  Tensor h = random_f32({1, 128, 768}, rng), sc = random_f32({768}, rng), b = random_f32({768}, rng);
  time_node(make_node(OpKind::LayerNormalization, 3), {&h, &sc, &b}, "LayerNorm [1,128,768]");
  Tensor hv = random_f32({1, 197, 768}, rng);
  time_node(make_node(OpKind::LayerNormalization, 3), {&hv, &sc, &b}, "LayerNorm [1,197,768]");
  Tensor logits = random_f32({1, 50265}, rng);
  time_node(make_node(OpKind::Softmax, 1), {&logits}, "Softmax [1,50265]");
  Tensor axes = i64({1}, {-1});
  time_node(make_node(OpKind::ReduceMean, 2), {&h, &axes}, "ReduceMean [1,128,768] axis -1");
  Tensor axes1 = i64({1}, {1});
  time_node(make_node(OpKind::ReduceMean, 2), {&h, &axes1}, "ReduceMean [1,128,768] axis 1");
  Tensor img = random_f32({1, 64, 112, 112}, rng), c64 = random_f32({64}, rng, 0.5, 1);
  time_node(make_node(OpKind::BatchNormalization, 5), {&img, &c64, &c64, &c64, &c64}, "BatchNorm [1,64,112,112]");
  Tensor axes23 = i64({2}, {2, 3});
  time_node(make_node(OpKind::ReduceMean, 2), {&img, &axes23}, "ReduceMean [1,64,112,112] axes 2,3");
}

}  // namespace
}  // namespace kiln::test
