// The vector math prelude (kiln_exp, kiln_log, kiln_erf, kiln_tanh, kiln_sigmoid), compiled the way
// kiln compiles kernels: each function applied to an array in an `omp simd` loop, checked against
// long double libm over dense input sweeps and special values, for the CPU's own ISA flags (FMA
// contraction) and for the baseline flags (no FMA); and every loop must be reported vectorised
// for each CPU tier.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "codegen/cpu/subprocess.h"
#include "codegen/cpu/vector_math.h"
#include "codegen_test_util.h"

namespace kiln::codegen::cpu::testing {
namespace {

enum Fn { kExp, kLog, kErf, kTanh, kSigmoid, kExpNonpos };
constexpr const char* kNames[] = {"exp", "log", "erf", "tanh", "sigmoid", "exp_nonpos"};
// The bounds stated in vector_math.cpp, in ulp of the exact result (below the normal range the ulp is
// the smallest subnormal, so there they are absolute bounds).
constexpr double kMaxUlp[] = {1.5, 1.5, 2.0, 3.0, 3.0, 1.5};
// exp_nonpos is defined for x <= 0 and NaN only: the sweeps give it those inputs.
template <class T> std::vector<T> domain_of(Fn fn, const std::vector<T>& x) {
  if (fn != kExpNonpos) return x;
  std::vector<T> d;
  for (T v : x)
    if (!(v > 0)) d.push_back(v);
  return d;
}

// One exported loop per function and type, each on its own source line (for -fopt-info).
struct TestSource {
  std::string code;
  std::vector<std::string> entries;
  std::vector<int> lines;  // entries[i] is defined on lines[i]
};

TestSource test_source() {
  TestSource s;
  s.code = std::string(kKernelExportPrelude) + std::string(vector_math_prelude());
  s.code +=
      "#define KILN_VM_LOOP(fn, T) KILN_EXPORT void vm_##fn##_##T(const T* __restrict x, T* __restrict y, "
      "long n) { _Pragma(\"omp simd\") for (long i = 0; i < n; ++i) y[i] = kiln_##fn(x[i]); }\n";
  for (const char* type : {"float", "double"}) {
    for (const char* fn : kNames) {
      s.lines.push_back(static_cast<int>(std::count(s.code.begin(), s.code.end(), '\n')) + 1);
      s.entries.push_back(std::string("vm_") + fn + "_" + type);
      s.code += std::string("KILN_VM_LOOP(") + fn + ", " + type + ")\n";
    }
  }
  return s;
}

long double reference(Fn fn, long double x) {
  switch (fn) {
    case kExp:
    case kExpNonpos: return std::exp(x);
    case kLog: return std::log(x);
    case kErf: return std::erf(x);
    case kTanh: return std::tanh(x);
    case kSigmoid: return x >= 0 ? 1.0L / (1.0L + std::exp(-x)) : std::exp(x) / (1.0L + std::exp(x));
  }
  return 0;
}

// |got - want| in ulp of T at want (the subnormal spacing below the normal range). A result that must
// be NaN or overflows T must match exactly (0 or infinity).
template <class T> double ulp_error(T got, long double want) {
  using L = std::numeric_limits<T>;
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isinf(static_cast<T>(want)) || !std::isfinite(got)) return got == static_cast<T>(want) ? 0.0 : INFINITY;
  int e = 0;
  std::frexp(want, &e);
  const long double ulp = std::ldexp(1.0L, std::max(e - 1, L::min_exponent - 1) - L::digits + 1);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

template <class T> using LoopFn = void(const T*, T*, long);

// The CPU's own flags (FMA contraction where it has FMA) and the baseline flags (no FMA): the bounds
// must hold for both. Compiled once for the suite.
struct Builds {
  TempDir dir;
  std::vector<CompiledKernel> native, baseline;
  Builds() {
    TestSource s = test_source();
    KernelSource src{"vector_math_test", s.code, s.entries};
    native = compile_kernels({src}, options_for(dir));
    baseline = compile_kernels({src}, options_for(dir), CpuFeatures::baseline());
  }
};

class VectorMath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { builds_ = new Builds; }
  static void TearDownTestSuite() {
    delete builds_;
    builds_ = nullptr;
  }
  static Builds* builds_;
};
Builds* VectorMath::builds_ = nullptr;

template <class T> const char* type_name() { return sizeof(T) == 4 ? "float" : "double"; }

template <class T> std::vector<T> apply(const CompiledKernel& k, Fn fn, const std::vector<T>& x) {
  auto* loop = reinterpret_cast<LoopFn<T>*>(k.entry(std::string("vm_") + kNames[fn] + "_" + type_name<T>()));
  std::vector<T> y(x.size());
  loop(x.data(), y.data(), static_cast<long>(x.size()));
  return y;
}

// Both builds against one long double reference; the largest error seen goes to the XML report
// (--gtest_output=xml) as <fn>_<type>_<build>_max_ulp.
template <class T> void expect_within_bounds(const Builds& b, Fn fn, const std::vector<T>& x) {
  std::vector<long double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = reference(fn, x[i]);
  for (auto [kernels, build] : {std::pair{&b.native, "native"}, std::pair{&b.baseline, "baseline"}}) {
    std::vector<T> y = apply((*kernels)[0], fn, x);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double e = ulp_error(y[i], want[i]);
      if (!(e <= worst)) worst = e, at = i;
    }
    EXPECT_LE(worst, kMaxUlp[fn]) << kNames[fn] << "(" << type_name<T>() << ", " << build << " build) at x = "
                                  << std::hexfloat << x[at] << ": got " << y[at] << ", want " << want[at];
    ::testing::Test::RecordProperty(std::string(kNames[fn]) + "_" + type_name<T>() + "_" + build + "_max_ulp",
                                    std::to_string(worst));
  }
}

template <class T> T from_bits(uint64_t b) {
  T v;
  if constexpr (sizeof(T) == 4) {
    uint32_t u = static_cast<uint32_t>(b);
    std::memcpy(&v, &u, 4);
  } else {
    std::memcpy(&v, &b, 8);
  }
  return v;
}

TEST_F(VectorMath, FloatWithinStatedBoundsOverDenseSweeps) {
  const Builds& b = *builds_;
  std::vector<float> x;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) x.push_back(from_bits<float>(bits));  // all ranges
  // Every 127th float with 2^-10 <= |x| < 128 (where erf, tanh and sigmoid change, and exp does not
  // overflow), and every 3rd float in [0.9, 1.1] (erf's two approximations meet at 1).
  for (uint32_t bits = 0x3a800000u; bits < 0x43000000u; bits += 127) {
    x.push_back(from_bits<float>(bits));
    x.push_back(-from_bits<float>(bits));
  }
  for (float v = 0.9f; v < 1.1f; v = std::nextafter(std::nextafter(std::nextafter(v, 2.0f), 2.0f), 2.0f))
    x.push_back(v);
  for (int fn = kExp; fn <= kExpNonpos; ++fn) {
    expect_within_bounds(b, static_cast<Fn>(fn), domain_of(static_cast<Fn>(fn), x));
  }
}

TEST_F(VectorMath, DoubleWithinStatedBoundsOverDenseSweeps) {
  const Builds& b = *builds_;
  std::mt19937_64 rng(20240611);
  std::vector<double> x;
  for (int i = 0; i < 200000; ++i) x.push_back(from_bits<double>(rng()));  // every exponent, both signs
  auto uniform = [&](double lo, double hi, int n) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (int i = 0; i < n; ++i) x.push_back(d(rng));
  };
  uniform(-750, 750, 100000);  // exp's range, including the subnormal results below -708.4
  uniform(-8, 8, 300000);      // erf, tanh, sigmoid
  uniform(0.8, 2.1, 100000);   // erf's switches at 0.84375 and 2 (double)
  uniform(0.5, 2, 100000);     // log near 1
  std::uniform_real_distribution<double> e(-60, 10);
  for (int i = 0; i < 100000; ++i) x.push_back(std::exp2(e(rng)) * (rng() % 2 ? 1 : -1));  // small |x|
  for (int fn = kExp; fn <= kExpNonpos; ++fn) {
    expect_within_bounds(b, static_cast<Fn>(fn), domain_of(static_cast<Fn>(fn), x));
  }
}

// Special values: exact results, checked bit for bit (so -0 is told from +0), NaN as any NaN; plus
// thresholds, subnormals and extreme inputs checked against the bounds.
template <class T> void check_special_values(const CompiledKernel& k) {
  using L = std::numeric_limits<T>;
  const T inf = L::infinity(), nan = L::quiet_NaN(), neg_nan = -L::quiet_NaN();
  struct Exact {
    Fn fn;
    T x, want;
  };
  const std::vector<Exact> exact = {
      {kExp, inf, inf},       {kExp, -inf, 0},        {kExp, 0, 1},           {kExp, T(1e4), inf},
      {kExp, T(-1e4), 0},     {kExp, L::max(), inf},  {kExp, -L::max(), 0},   {kLog, 0, -inf},
      {kLog, -T(0), -inf},    {kLog, 1, 0},           {kLog, inf, inf},       {kLog, -1, nan},
      {kLog, -inf, nan},      {kLog, -L::denorm_min(), nan},                  {kErf, inf, 1},
      {kErf, -inf, -1},       {kErf, 0, 0},           {kErf, -T(0), -T(0)},   {kErf, T(1e30), 1},
      {kTanh, inf, 1},        {kTanh, -inf, -1},      {kTanh, 0, 0},          {kTanh, -T(0), -T(0)},
      {kTanh, T(-1e30), -1},  {kSigmoid, -inf, 0},    {kSigmoid, inf, 1},     {kSigmoid, 0, T(0.5)},
      {kSigmoid, T(-1e30), 0}, {kSigmoid, T(1e30), 1}, {kExpNonpos, -inf, 0},  {kExpNonpos, 0, 1},
      {kExpNonpos, -T(0), 1}, {kExpNonpos, T(-1e4), 0}, {kExpNonpos, -L::max(), 0},
  };
  const char* type = type_name<T>();
  auto run = [&](Fn fn, const std::vector<T>& x) { return apply(k, fn, x); };
  for (const Exact& c : exact) {
    T got = run(c.fn, {c.x})[0];
    bool ok = std::isnan(c.want) ? std::isnan(got) : std::memcmp(&got, &c.want, sizeof(T)) == 0;
    EXPECT_TRUE(ok) << kNames[c.fn] << "(" << type << " " << c.x << ") = " << got << ", want " << c.want;
  }
  std::vector<T> edges = {nan, neg_nan, L::denorm_min(), -L::denorm_min(), L::min(), -L::min(), L::max(),
                          -L::max(), L::epsilon(), T(1) - L::epsilon() / 2, T(1) + L::epsilon()};
  for (double v : {88.72283, 88.72284, -87.33654, -87.33655, -103.9720, -103.9721, 709.782712893384,
                   709.782712893385, -708.3964185322641, -745.1332191019411, -745.1332191019412, 0.84375, 1.0, 2.0,
                   3.9, 4.0, 5.9, 6.0, 9.0, 10.0, 19.0, 20.0, 0.5, 0.25, 1e-5, 1e-20, 1e-40, 1e-300}) {
    for (T w : {T(v), std::nextafter(T(v), inf), std::nextafter(T(v), -inf), T(-v)}) edges.push_back(w);
  }
  for (T v = L::denorm_min(); v < L::min(); v *= T(3)) edges.push_back(v);  // subnormal inputs (log, erf)
  for (int fn = kExp; fn <= kExpNonpos; ++fn) {
    const std::vector<T> in = domain_of(static_cast<Fn>(fn), edges);
    std::vector<T> y = run(static_cast<Fn>(fn), in);
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << kNames[fn] << "(" << type << " NaN) = " << y[i];
        continue;
      }
      EXPECT_LE(ulp_error(y[i], reference(static_cast<Fn>(fn), in[i])), kMaxUlp[fn])
          << kNames[fn] << "(" << type << " " << std::hexfloat << in[i] << ") = " << y[i] << ", want "
          << reference(static_cast<Fn>(fn), in[i]);
    }
  }
}

TEST_F(VectorMath, SpecialValuesThresholdsAndSubnormals) {
  const Builds& b = *builds_;
  for (const std::vector<CompiledKernel>* k : {&b.native, &b.baseline}) {
    check_special_values<float>((*k)[0]);
    check_special_values<double>((*k)[0]);
  }
}

// The compiler's own report: the same source, kiln's flags for a CPU tier, plus
// -fopt-info-vec-optimized, must say "loop vectorized" on every loop's line. Compiling only, so every
// tier is checked whatever this CPU has: AVX-512, AVX2 (where GCC 12 cannot if-convert trapping
// floating-point work behind a branch, the reason for kiln_vm_select), and SSE2, where the double
// versions stay scalar (64-bit lane masks), so only the float loops are required there.
TEST(VectorMathCompile, EveryLoopIsVectorisedForEachCpuTier) {
  TempDir dir;
  TestSource s = test_source();
  const fs::path source = dir.root() / "vm.cpp";
  write_file(source, s.code);
  for (const CpuFeatures& features : {CpuFeatures::avx512_tier(), CpuFeatures::avx2_tier(), CpuFeatures::baseline()}) {
    std::vector<std::string> argv = {Options().cxx};
    for (std::string& f : compile_flags(features)) argv.push_back(std::move(f));
    argv.insert(argv.end(), {"-fopt-info-vec-optimized", source.string(), "-o", (dir.root() / "vm.so").string()});
    ProcessResult r = run_process(argv);
    ASSERT_TRUE(r.ok()) << r.status_text() << "\n" << r.output.substr(0, 4000);
    for (size_t i = 0; i < s.entries.size(); ++i) {
      if (s.entries[i].ends_with("_double") && !features.has_avx2_tier()) continue;
      const std::string mark = "vm.cpp:" + std::to_string(s.lines[i]) + ":";
      bool vectorised = false;
      for (size_t at = r.output.find(mark); at != std::string::npos; at = r.output.find(mark, at + 1)) {
        const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
        vectorised = vectorised || line.find("optimized: loop vectorized") != std::string::npos;
      }
      EXPECT_TRUE(vectorised) << s.entries[i] << " (line " << s.lines[i] << ") not vectorised for "
                              << to_string(features) << ":\n" << r.output.substr(0, 4000);
    }
  }
}

// Not a check (timings are never asserted): with KILN_VM_BENCH=1, times each function and a GELU
// (erf form) over 128x3072 floats, kiln_* against std::*, on one thread in this process: median of 9
// interleaved runs.
TEST(VectorMathCompile, TimingAgainstLibm) {
  const char* on = std::getenv("KILN_VM_BENCH");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set KILN_VM_BENCH=1 to print timings";
  const std::vector<std::string> fns = {"gelu", "exp", "log", "erf", "tanh", "sigmoid"};
  std::string code = std::string(kKernelExportPrelude) + "#include <cmath>\n" + std::string(vector_math_prelude());
  code += R"(static inline float std_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
static inline float kiln_gelu(float v) { return 0.5f * v * (1.0f + kiln_erf(v * 0x1.6a09e6p-1f)); }
static inline float std_gelu(float v) { return 0.5f * v * (1.0f + std::erf(v * 0x1.6a09e6p-1f)); }
#define KILN_VM_BENCH(name, fn) KILN_EXPORT void name(const float* __restrict x, float* __restrict y, long n) { \
  _Pragma("omp simd") for (long i = 0; i < n; ++i) y[i] = fn(x[i]); }
)";
  std::vector<std::string> entries;
  for (const std::string& f : fns) {
    const std::string std_fn = f == "sigmoid" || f == "gelu" ? "std_" + f : "std::" + f;
    code += "KILN_VM_BENCH(kiln_" + f + "_loop, kiln_" + f + ")\nKILN_VM_BENCH(std_" + f + "_loop, " + std_fn + ")\n";
    entries.push_back("kiln_" + f + "_loop");
    entries.push_back("std_" + f + "_loop");
  }
  TempDir dir;
  std::vector<CompiledKernel> k = compile_kernels({{"vector_math_bench", code, entries}}, options_for(dir));
  const size_t n = 128 * 3072;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> x(n), positive(n), y(n);
  for (size_t i = 0; i < n; ++i) x[i] = dist(rng), positive[i] = std::fabs(x[i]) + 1e-3f;
  for (const std::string& f : fns) {
    std::vector<double> kiln_ms, std_ms;
    const float* in = f == "log" ? positive.data() : x.data();
    for (int run = 0; run < 9; ++run) {
      for (auto [prefix, times] : {std::pair{"kiln_", &kiln_ms}, std::pair{"std_", &std_ms}}) {
        auto* loop = reinterpret_cast<LoopFn<float>*>(k[0].entry(prefix + f + "_loop"));
        const auto t0 = std::chrono::steady_clock::now();
        loop(in, y.data(), static_cast<long>(n));
        times->push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    std::sort(kiln_ms.begin(), kiln_ms.end());
    std::sort(std_ms.begin(), std_ms.end());
    std::printf("%-8s 128x3072 f32, 1 thread: kiln %.3f ms, std %.3f ms (x%.1f)\n", f.c_str(), kiln_ms[4], std_ms[4],
                std_ms[4] / kiln_ms[4]);
  }
}

}  // namespace
}  // namespace kiln::codegen::cpu::testing
