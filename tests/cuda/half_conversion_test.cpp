// The f16 / bf16 conversions of the generated kernels' preamble (codegen/cuda/scalar_cuda.cpp), compiled
// as host C++ (the same integer arithmetic runs on the device) and checked against kiln's host
// conversions (include/kiln/tensor.h): every f16 word widened, and f32 bit patterns across the whole
// range (every 251st, plus the edges of rounding, overflow and the subnormals) narrowed to both types.
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
