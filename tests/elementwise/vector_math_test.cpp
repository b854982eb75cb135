// Accuracy of the vectorised f32 exp/log/erf/tanh/sigmoid (Sleef u10 on AVX-512/AVX2, libm otherwise)
// against f64 libm rounded to f32, measured in f32 ulps over a sweep of every exponent range plus a
// dense sample of the range models use.
//
// Measured on this machine (AMD EPYC, Sleef 3.5.1, glibc 2.36), max error in f32 ulps against f64
// libm rounded to f32, over results in the f32 normal range:
//            exp  log  erf  tanh  sigmoid
//   avx512    1    1    1    1     2        (Sleef *f16_u10)
//   avx2      1    1    1    1     2        (Sleef *f8_u10)
//   scalar    1    1    1    2     2        (glibc expf/logf/erff/tanhf)
// Where the true result is an f32 subnormal the absolute error is at most 2^-149 (one subnormal step).
// The limits below are exactly these numbers; NaN must map to NaN both ways.
#include "elementwise_test_util.h"
#include "ops/elementwise/vector_math.h"

namespace kiln::testing_elementwise {
namespace {

using elementwise::VecFn;

struct Sweep {
  std::vector<float> x;
  Sweep() {
    // Every 4099th bit pattern (all exponents, both signs, NaN and Inf included) ...
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
      uint32_t bits = static_cast<uint32_t>(b);
      float f;
      std::memcpy(&f, &bits, 4);
      x.push_back(f);
    }
    // ... plus a dense uniform sample of [-20, 20], and the special values.
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uni(-20.0f, 20.0f);
    for (int i = 0; i < 400000; ++i) x.push_back(uni(rng));
    for (float s : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                    std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()})
      x.push_back(s);
  }
};
const Sweep& sweep() {
  static const Sweep s;
  return s;
}

struct Measured {
  int64_t max_ulp_normal = 0;    // where the reference is an f32 normal number (or 0, Inf, NaN)
  double max_abs_subnormal = 0;  // where the reference is an f32 subnormal
};

template <class Vec, class Ref>
Measured measure(Vec vec, Ref ref) {
  const auto& x = sweep().x;
  std::vector<float> y(x.size());
  vec(x.data(), y.data(), static_cast<int64_t>(x.size()));
  Measured m;
  for (size_t i = 0; i < x.size(); ++i) {
    float r = static_cast<float>(ref(static_cast<double>(x[i])));
    if (std::isnan(r) || std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(r) && std::isnan(y[i])) << "x = " << x[i] << ": got " << y[i] << ", want " << r;
      continue;
    }
    if (r != 0 && std::fabs(r) < std::numeric_limits<float>::min()) {
      m.max_abs_subnormal = std::max(m.max_abs_subnormal, std::fabs(static_cast<double>(y[i]) - r));
      continue;
    }
    int64_t u = ulp_distance(y[i], r);
    if (u > m.max_ulp_normal) m.max_ulp_normal = u;
    EXPECT_LE(u, 3) << "x = " << x[i] << ": got " << y[i] << ", want " << r;
    if (u > 3) break;
  }
  return m;
}

using elementwise::VecBackend;

struct BackendName {
  VecBackend backend;
  const char* name;
};
constexpr BackendName kBackends[] = {{VecBackend::avx512, "avx512"}, {VecBackend::avx2, "avx2"}, {VecBackend::scalar, "scalar"}};

// Measures fn (nullopt: sigmoid) on every backend this machine can run; the scalar one always runs.
// max_ulp applies to the Sleef backends, libm_ulp to the scalar (glibc) one.
void check(std::optional<VecFn> fn, double (*ref)(double), int64_t max_ulp, int64_t libm_ulp, const char* name) {
  for (const auto& b : kBackends) {
    float probe = 0;
    if (!elementwise::vector_math_f32_on(b.backend, fn, &probe, &probe, 1)) {
      std::printf("[ accuracy ] %s: backend %s not available here\n", name, b.name);
      continue;
    }
    Measured m = measure(
        [&](const float* x, float* y, int64_t n) { elementwise::vector_math_f32_on(b.backend, fn, x, y, n); }, ref);
    std::printf("[ accuracy ] %s (%s): max %lld ulp, subnormal abs error %.3g\n", name, b.name,
                static_cast<long long>(m.max_ulp_normal), m.max_abs_subnormal);
    EXPECT_LE(m.max_ulp_normal, b.backend == VecBackend::scalar ? libm_ulp : max_ulp) << name << " " << b.name;
    EXPECT_LE(m.max_abs_subnormal, static_cast<double>(std::numeric_limits<float>::denorm_min())) << name << " " << b.name;
  }
}

TEST(VectorMath, ExpWithinOneUlp) { check(VecFn::exp, [](double v) { return std::exp(v); }, 1, 1, "exp"); }
TEST(VectorMath, LogWithinOneUlp) { check(VecFn::log, [](double v) { return std::log(v); }, 1, 1, "log"); }
TEST(VectorMath, ErfWithinOneUlp) { check(VecFn::erf, [](double v) { return std::erf(v); }, 1, 1, "erf"); }
TEST(VectorMath, TanhWithinOneUlp) { check(VecFn::tanh, [](double v) { return std::tanh(v); }, 1, 2, "tanh"); }
TEST(VectorMath, SigmoidWithinTwoUlps) {
  check(std::nullopt, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 2, 2, "sigmoid");
}

TEST(VectorMath, KernelsUseTheBestBackend) {
  std::string best = elementwise::vector_math_backend();
  EXPECT_TRUE(best == "avx512" || best == "avx2" || best == "scalar");
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(best, "avx512") << "is libsleef.so.3 installed?";
  }
}

TEST(VectorMath, EveryLengthAndAliasing) {
  // Lengths around the vector widths (masked / buffered tails), and in place (y == x).
  for (const auto& b : kBackends) {
    float probe = 0;
    if (!elementwise::vector_math_f32_on(b.backend, VecFn::exp, &probe, &probe, 1)) continue;
    for (int64_t n = 0; n <= 40; ++n) {
      auto at = [](int64_t i) { return static_cast<size_t>(i); };
      std::vector<float> x(at(n)), y(at(n) + 1, -7.0f);
      for (int64_t i = 0; i < n; ++i) x[at(i)] = 0.25f * static_cast<float>(i) - 3.0f;
      elementwise::vector_math_f32_on(b.backend, VecFn::exp, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_LE(ulp_distance(y[at(i)], static_cast<float>(std::exp(static_cast<double>(x[at(i)])))), 1) << b.name;
      ASSERT_EQ(y[at(n)], -7.0f) << "wrote past the end at n = " << n << " on " << b.name;
      elementwise::vector_math_f32_on(b.backend, VecFn::tanh, x.data(), x.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_LE(ulp_distance(x[at(i)], static_cast<float>(std::tanh(0.25 * static_cast<double>(i) - 3.0))), 1) << b.name;
    }
  }
}

}  // namespace
}  // namespace kiln::testing_elementwise
