// The f16 / bf16 conversions of the generated kernels' preamble (codegen/cuda/scalar_cuda.cpp), compiled
// as host C++ (the same integer arithmetic runs on the device) and checked against kiln's host
// conversions (include/kiln/tensor.h): every f16 word widened, and f32 bit patterns across the whole
// range (every 251st, plus the edges of rounding, overflow and the subnormals) narrowed to both types,
// and f64 values (every half tie and its neighbours, random patterns) narrowed with one rounding.
// The emitted text of a half kernel, and its NVRTC compile, are checked too.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "codegen/cpu/subprocess.h"
#include "codegen/cuda/emit_pointwise_cuda.h"
#include "codegen/cuda/scalar_cuda.h"
#include "common/temp_dir.h"
#include "cuda_test_util.h"
#include "kiln/tensor.h"
#include "ops/elementwise/elementwise.h"

namespace kiln::backend::cuda::testing {
namespace {

constexpr const char* kShim = R"(#include <math.h>
#include <string.h>
#define __device__
#define __forceinline__ inline
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, sizeof f); return f; }
static inline float __uint_as_float(unsigned b) { float f; memcpy(&f, &b, sizeof f); return f; }
static inline unsigned __float_as_uint(float f) { unsigned b; memcpy(&b, &f, sizeof b); return b; }
static inline double __longlong_as_double(long long b) { double d; memcpy(&d, &b, sizeof d); return d; }
)";

constexpr const char* kEntries = R"(
extern "C" float test_f16_to_f32(unsigned short h) { return kiln_f16_to_f32(h); }
extern "C" float test_bf16_to_f32(unsigned short h) { return kiln_bf16_to_f32(h); }
extern "C" unsigned short test_f32_to_f16(float f) { return kiln_f32_to_f16(f); }
extern "C" unsigned short test_f32_to_bf16(float f) { return kiln_f32_to_bf16(f); }
extern "C" unsigned short test_f64_to_f16(double d) { return kiln_f32_to_f16(kiln_f64_to_f32_odd(d)); }
extern "C" unsigned short test_f64_to_bf16(double d) { return kiln_f32_to_bf16(kiln_f64_to_f32_odd(d)); }
)";

class HalfConversions : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string source = (dir_.root() / "half.cpp").string(), library = (dir_.root() / "half.so").string();
    std::ofstream(source, std::ios::binary) << kShim << codegen::cuda::cuda_scalar_preamble() << kEntries;
    const char* cxx = std::getenv("CXX");
    codegen::cpu::ProcessResult r = codegen::cpu::run_process(
        {cxx && *cxx ? cxx : "g++", "-std=c++17", "-O1", "-fPIC", "-shared", "-w", source, "-o", library});
    if (r.spawn_errno) GTEST_SKIP() << "SKIPPED: no host C++ compiler: " << r.status_text();
    ASSERT_TRUE(r.ok()) << "the preamble does not compile as host C++: " << r.output.substr(0, 4000);
    handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    if (handle_) ::dlclose(handle_);
  }
  template <class F>
  F* entry(const char* name) {
    return reinterpret_cast<F*>(::dlsym(handle_, name));
  }
  test_common::TempDir dir_{"kiln-half-conversions"};
  void* handle_ = nullptr;
};

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;  // -0 is not +0
}
bool same_word(uint16_t a, uint16_t b, bool bf16) {
  const uint16_t exp_mask = bf16 ? 0x7f80 : 0x7c00, mant_mask = bf16 ? 0x007f : 0x03ff;
  const bool nan_a = (a & exp_mask) == exp_mask && (a & mant_mask), nan_b = (b & exp_mask) == exp_mask && (b & mant_mask);
  return nan_a || nan_b ? nan_a && nan_b : a == b;
}
float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST_F(HalfConversions, WideningIsExactForEveryWord) {
  auto* f16 = entry<float(unsigned short)>("test_f16_to_f32");
  auto* bf16 = entry<float(unsigned short)>("test_bf16_to_f32");
  ASSERT_TRUE(f16 && bf16);
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    ASSERT_TRUE(same_float(f16(uint16_t(h)), half_to_float(uint16_t(h)))) << "f16 word " << h;
    ASSERT_TRUE(same_float(bf16(uint16_t(h)), bf16_to_float(uint16_t(h)))) << "bf16 word " << h;
  }
}

TEST_F(HalfConversions, NarrowingRoundsToNearestEvenAcrossTheRange) {
  auto* f16 = entry<unsigned short(float)>("test_f32_to_f16");
  auto* bf16 = entry<unsigned short(float)>("test_f32_to_bf16");
  ASSERT_TRUE(f16 && bf16);
  std::vector<uint32_t> patterns;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 251) patterns.push_back(uint32_t(u));
  // Around each half's rounding points: ties, overflow to infinity, the subnormal / normal boundary.
  for (uint32_t base : {0x477fe000u, 0x477ff000u, 0x38800000u, 0x387fc000u, 0x33000000u, 0x7f7f8000u, 0x3f808000u})
    for (uint32_t d = 0; d < 64; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) {
        patterns.push_back((base + d) | sign);
        patterns.push_back((base - d) | sign);
      }
  for (uint32_t u : patterns) {
    const float f = bits_to_float(u);
    ASSERT_TRUE(same_word(f16(f), float_to_half(f), false)) << "f32 bits " << std::hex << u << ": " << f16(f)
                                                            << " vs " << float_to_half(f);
    ASSERT_TRUE(same_word(bf16(f), float_to_bf16(f), true)) << "f32 bits " << std::hex << u;
  }
}

// f64 -> f16 / bf16 (a Cast from f64 or an integer): one rounding of the double, as kiln's Cast
// (ops/elementwise/cast.cpp) does, at each half's ties and just off them (where rounding through f32
// first would round twice), across the f64 range and at the edges of overflow and of the subnormals.
TEST_F(HalfConversions, NarrowingADoubleRoundsOnce) {
  auto* f16 = entry<unsigned short(double)>("test_f64_to_f16");
  auto* bf16 = entry<unsigned short(double)>("test_f64_to_bf16");
  ASSERT_TRUE(f16 && bf16);
  std::vector<double> values;
  for (uint32_t h = 0; h < 0x7fff; ++h) {
    for (bool b : {false, true}) {
      const double v = b ? bf16_to_float(uint16_t(h)) : half_to_float(uint16_t(h));
      const double next = b ? bf16_to_float(uint16_t(h + 1)) : half_to_float(uint16_t(h + 1));
      if (!std::isfinite(v) || !std::isfinite(next)) continue;
      const double tie = v + (next - v) / 2;
      for (double d : {tie, std::nextafter(tie, 0.0), std::nextafter(tie, INFINITY), tie + (next - v) * 0x1p-30,
                       tie - (next - v) * 0x1p-30, v, v + (next - v) * 0x1p-40})
        for (double sign : {1.0, -1.0}) values.push_back(sign * d);
    }
  }
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 200000; ++i) {  // random f64 bit patterns
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    double d;
    std::memcpy(&d, &x, sizeof d);
    values.push_back(d);
  }
  for (double d : std::initializer_list<double>{0.0, -0.0, INFINITY, -INFINITY, NAN, 65520.0, 65519.999, 0x1.fep127 + 0x1p119, 0x1.fep127,
                   0x1.fffffep127, 0x1p128, 1e300, 0x1p-25, 0x1.0000000001p-25, 0x1p-134, 0x1.00001p-134, 1e-300,
                   0x1p-149, 0x1p-150, 0x1.8p-150})
    for (double sign : {1.0, -1.0}) values.push_back(sign * d);
  const Tensor doubles = Tensor::from_vector<double>(DType::f64, {int64_t(values.size())}, values);
  const Tensor want16 = elementwise::convert_elements(doubles, DType::f16, false);
  const Tensor want_bf = elementwise::convert_elements(doubles, DType::bf16, false);
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(same_word(f16(values[i]), want16.data<uint16_t>()[i], false)) << "f16 of " << std::hexfloat << values[i];
    ASSERT_TRUE(same_word(bf16(values[i]), want_bf.data<uint16_t>()[i], true)) << "bf16 of " << std::hexfloat << values[i];
  }
}

// bf16 in, f16 in, bf16 out: 16-bit words in memory, float arithmetic, one rounding at the explicit Cast
// and one at the store.
loops::PointwiseKernel half_kernel() {
  loops::PointwiseKernel k;
  k.name = "half_add";
  k.inputs = {{DType::bf16, {loops::Expr(5)}}, {DType::f16, {loops::Expr(5)}}};
  k.output = {DType::bf16, {loops::Expr(5)}};
  k.body = loops::add(loops::load_broadcast(k, 0), loops::cast(DType::bf16, loops::load_broadcast(k, 1)));
  return k;
}

TEST(CudaHalfEmitter, HalfTypesAreWordsInMemoryAndFloatsInArithmetic) {
  const std::string code = codegen::cuda::emit_pointwise_cuda(half_kernel()).code;
  for (const char* want : {"const unsigned short* __restrict__ in0, const unsigned short* __restrict__ in1, "
                           "unsigned short* __restrict__ out",
                           "const float v0 = kiln_bf16_to_f32(in0[i]);", "const float v1 = kiln_f16_to_f32(in1[i]);",
                           "const float v2 = kiln_round_bf16((float)v1);", "const float v3 = (v0 + v2);",
                           "out[i] = kiln_f32_to_bf16(v3);"})
    EXPECT_NE(code.find(want), std::string::npos) << want << "\n" << code;
}

class CudaHalfNvrtc : public NvrtcTest {};

TEST_F(CudaHalfNvrtc, AHalfKernelCompilesForSm90aAndSm80) {
  const codegen::cuda::CudaSource src = codegen::cuda::emit_pointwise_cuda(half_kernel());
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const CompiledCubin compiled = compile_to_cubin(src.code, src.name + ".cu", arch);
    EXPECT_EQ(compiled.log, "") << arch;
    EXPECT_FALSE(compiled.cubin.empty()) << arch;
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
