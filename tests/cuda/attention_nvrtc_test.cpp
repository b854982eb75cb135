// The attention kernel's source (backend/cuda/cuda_attention.h) compiles with NVRTC for sm_90a with
// an empty log, for every dtype, with and without its mask and guard, at head dims 1, 40, 64 and 128,
// and the tensor-core kernel for bf16 and f16 at head dims 16 to 128 with blocks of 1, 2 and 4 warps
// (the GPU tests in tests/cuda_session run it).
#include <gtest/gtest.h>

#include <fmt/format.h>

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
          const AttentionSpec spec{t, d, mask, !mask, warps};
          ASSERT_TRUE(attention_uses_tensor_cores(spec));
          const std::string code = attention_mma_source("attention_mma_test", spec);
          EXPECT_NE(code.find(fmt::format("__launch_bounds__({})", 32 * warps)), std::string::npos);
          // Two key-tile stages where both fit in static shared memory (head dims to 64), one past that.
          EXPECT_NE(code.find(fmt::format("key-tile stages {}", d <= 64 ? 2 : 1)), std::string::npos);
          const CompiledCubin c = compile_to_cubin(code, "attention_mma_test.cu", "sm_90a");
          EXPECT_EQ(c.log, "") << dtype_name(t) << " D=" << d << " warps " << warps << "\n" << code;
          EXPECT_FALSE(c.cubin.empty());
        }
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
