// The attention kernel's source (backend/cuda/cuda_attention.h) compiles with NVRTC for sm_90a with
// an empty log, for every dtype, with and without its mask and guard, at head dims 1, 40, 64 and 128,
// and the tensor-core kernel for bf16 and f16 at head dims 16 to 128 with blocks of 1, 2 and 4 warps
// (the GPU tests in tests/cuda_session run it), and the Hopper (wgmma) kernel without spills.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>
#include <sstream>

#include "backend/cuda/cuda_attention.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"

namespace kiln::backend::cuda::testing {
namespace {

class AttentionNvrtc : public NvrtcTest {};

TEST_F(AttentionNvrtc, EveryVariantCompilesForSm90a) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (int64_t d : {1, 40, 64, 128})
      for (bool mask : {false, true}) {
        const AttentionSpec spec{t, d, mask, mask};
        const std::string code = attention_source("attention_test", spec);
        EXPECT_EQ(kernels_starting_with_the_prologue(code, "attention"), 1);
        const CompiledCubin c = compile_to_cubin(code, "attention_test.cu", "sm_90a");
        EXPECT_EQ(c.log, "") << dtype_name(t) << " D=" << d << "\n" << code;
        EXPECT_FALSE(c.cubin.empty());
      }
}

TEST_F(AttentionNvrtc, EveryTensorCoreVariantCompilesForSm90a) {
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t d : {16, 32, 64, 128})
      for (bool mask : {false, true})
        for (int warps : {1, 2, 4}) {
          if (warps != 4 && (t != DType::bf16 || d != 64)) continue;  // the warps change no operand code
          AttentionSpec spec{t, d, mask, !mask, warps};
          spec.positive_scale = warps == 4;  // unmasked: the scale inside the exponents
          ASSERT_TRUE(attention_uses_tensor_cores(spec));
          const std::string code = attention_mma_source("attention_mma_test", spec);
          EXPECT_EQ(kernels_starting_with_the_prologue(code, "attention_mma"), 1);
          EXPECT_NE(code.find(fmt::format("__launch_bounds__({})", 32 * warps)), std::string::npos);
          // Two key-tile stages where both fit in static shared memory (head dims to 64), one past that.
          EXPECT_NE(code.find(fmt::format("key-tile stages {}", d <= 64 ? 2 : 1)), std::string::npos);
          const CompiledCubin c = compile_to_cubin(code, "attention_mma_test.cu", "sm_90a");
          EXPECT_EQ(c.log, "") << dtype_name(t) << " D=" << d << " warps " << warps << "\n" << code;
          EXPECT_FALSE(c.cubin.empty());
        }
}

// The Hopper kernel at both head dims, with one and two consumers, with and without the mask and the
// overlap of softmax and the next Q K^T, bf16 and f16: ptxas (-v) reports no spills and none of its C75xx notes (setmaxnreg ignored, wgmma serialised or
// waited on), and the source says its config.
TEST_F(AttentionNvrtc, EveryWgmmaVariantCompilesForSm90aWithoutSpills) {
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t d : {64, 128})
      for (int consumers : {1, 2})
        for (bool mask : {false, true})
          for (bool overlap : {true, false}) {
          if (t == DType::f16 && (consumers == 1 || !mask || !overlap)) continue;  // the dtype changes two words
          AttentionSpec spec{t, d, mask, !mask};
          spec.wgmma_consumers = consumers;
          spec.wgmma_overlap = overlap;
          spec.positive_scale = overlap;  // unmasked: the scale inside the exponents
          ASSERT_TRUE(attention_uses_wgmma(spec));
          const std::string what =
              fmt::format("{} D={} consumers {} mask {} overlap {}", dtype_name(t), d, consumers, mask, overlap);
          const std::string code = attention_wgmma_source("attention_wgmma_test", spec);
          EXPECT_EQ(kernels_starting_with_the_prologue(code, what), 1);
          EXPECT_NE(code.find(fmt::format("{} consumer warpgroups, {} keys a tile", consumers,
                                          attention_wgmma_keys_a_tile(spec))),
                    std::string::npos)
              << what;
          const CompiledCubin c = compile_to_cubin(code, "attention_wgmma_test.cu", "sm_90a", {"--ptxas-options=-v"});
          std::istringstream log(c.log);
          for (std::string line; std::getline(log, line);) {
            if (line.empty()) continue;
            EXPECT_EQ(line.rfind("ptxas", 0), 0u) << what << ": " << line;
            EXPECT_EQ(line.find("(C75"), std::string::npos) << what << ": " << line;
            std::smatch m;
            if (std::regex_search(line, m, std::regex("([0-9]+) bytes spill (stores|loads)"))) {
              EXPECT_EQ(m[1], "0") << what << ": " << line;
            }
          }
          EXPECT_FALSE(c.cubin.empty()) << what;
        }
}

TEST(AttentionSource, TheWgmmaKernelTakesHalvesAtHeadDims64And128) {
  EXPECT_TRUE(attention_uses_wgmma(AttentionSpec{DType::bf16, 64, true, true}));
  EXPECT_TRUE(attention_uses_wgmma(AttentionSpec{DType::f16, 128, false, false}));
  EXPECT_FALSE(attention_uses_wgmma(AttentionSpec{DType::bf16, 32, false, false}));
  EXPECT_FALSE(attention_uses_wgmma(AttentionSpec{DType::bf16, 96, false, false}));
  EXPECT_FALSE(attention_uses_wgmma(AttentionSpec{DType::f32, 64, false, false}));
  EXPECT_THROW(attention_wgmma_source("a", AttentionSpec{DType::f32, 64, false, false}), InternalError);
  AttentionSpec three{DType::bf16, 64, false, false};
  three.wgmma_consumers = 3;
  EXPECT_THROW(attention_wgmma_source("a", three), InternalError);
  // One consumer where 64-row blocks take less time in waves (a block of two consumers counted 1.3x),
  // else two: 12 heads at S = 128 (bert) and 512 take one (1 wave against 1.3), 2048 two (3 against 2.6),
  // 8192 two (12 against 7.8).
  EXPECT_EQ(attention_wgmma_consumers(12, 128, 132), 1);
  EXPECT_EQ(attention_wgmma_consumers(12, 512, 132), 1);
  EXPECT_EQ(attention_wgmma_consumers(12, 2048, 132), 2);
  EXPECT_EQ(attention_wgmma_consumers(12, 8192, 132), 2);
  EXPECT_EQ(attention_wgmma_consumers(0, 8192, 132), 2) << "symbolic sizes";
  EXPECT_EQ(attention_wgmma_consumers(12, 0, 132), 2) << "symbolic sizes";
  // 64 rows a consumer and two stages of K and V tiles, 1 KB of alignment and the barriers.
  AttentionSpec big{DType::bf16, 128, true, true};
  EXPECT_EQ(attention_wgmma_keys_a_tile(big), 64);
  EXPECT_EQ(attention_wgmma_shared_bytes(big), size_t(128 + 4 * 64) * 256 + 1024 + 72);
}

// Four warps a block, fewer only where a (batch, head) has too few query rows to give each warp 16.
TEST(AttentionSource, WarpsABlockFollowTheQueryRows) {
  EXPECT_EQ(attention_mma_warps(128), 4) << "bert";
  EXPECT_EQ(attention_mma_warps(8192), 4);
  EXPECT_EQ(attention_mma_warps(0), 4) << "symbolic sizes";
  EXPECT_EQ(attention_mma_warps(33), 4);
  EXPECT_EQ(attention_mma_warps(32), 2);
  EXPECT_EQ(attention_mma_warps(17), 2);
  EXPECT_EQ(attention_mma_warps(16), 1);
  EXPECT_EQ(attention_mma_warps(1), 1);
  EXPECT_THROW(attention_mma_source("a", AttentionSpec{DType::bf16, 64, false, false, 3}), InternalError);
}

TEST(AttentionSource, TensorCoresTakeHalvesAtHeadDimsOfSixteens) {
  EXPECT_TRUE(attention_uses_tensor_cores(AttentionSpec{DType::bf16, 64, true, true}));
  EXPECT_FALSE(attention_uses_tensor_cores(AttentionSpec{DType::bf16, 40, true, true}));
  EXPECT_FALSE(attention_uses_tensor_cores(AttentionSpec{DType::f32, 64, true, true}));
  EXPECT_FALSE(attention_uses_tensor_cores(AttentionSpec{DType::f16, 144, false, false}));
  EXPECT_THROW(attention_mma_source("a", AttentionSpec{DType::f32, 64, false, false}), InternalError);
}

TEST(AttentionSource, AHeadDimPast128IsAnInternalError) {
  EXPECT_THROW(attention_source("a", AttentionSpec{DType::f32, 129, false, false}), InternalError);
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
