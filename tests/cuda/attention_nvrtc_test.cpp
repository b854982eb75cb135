// The attention kernel's source (backend/cuda/cuda_attention.h) compiles with NVRTC for sm_90a with
// an empty log, for every dtype, with and without its mask and guard, at head dims 1, 40, 64 and 128
// (the GPU tests in tests/cuda_session run it).
#include <gtest/gtest.h>

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

TEST(AttentionSource, AHeadDimPast128IsAnInternalError) {
  EXPECT_THROW(attention_source("a", AttentionSpec{DType::f32, 129, false, false}), InternalError);
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
