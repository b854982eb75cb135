// cuBLASLt's route (backend/cuda/cublaslt.h) where no GPU is needed: loading the library, describe(),
// the refusals of bad problems and the row-major to column-major mapping.
#include <string>

#include "backend/cuda/cublaslt.h"
#include "cublaslt_test_util.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"

namespace kiln::backend::cuda::testing {
namespace {


TEST(CublasLtLoader, AMissingLibraryIsAUserErrorNamingEachCandidate) {
  try {
    load_cublaslt({"libkiln-no-such-cublasLt.so.13", "/kiln/no/such/folder/libcublasLt.so"});
    FAIL() << "loaded a cuBLASLt that does not exist";
  } catch (const UserError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("device cuda: no cuBLASLt 13 library (the CUDA toolkit's matmul library) found; tried:", 0),
              0u)
        << message;
    EXPECT_NE(message.find("\n  libkiln-no-such-cublasLt.so.13: "), std::string::npos) << message;
    EXPECT_NE(message.find("\n  /kiln/no/such/folder/libcublasLt.so: "), std::string::npos) << message;
  }
}

TEST(CublasLtLoader, CandidatesAreTheSonameThenTheToolkitsFolder) {
  std::vector<std::string> expected = {"libcublasLt.so.13", "libcublasLt.so",
                                       toolkit_root() + "/lib64/libcublasLt.so.13",
                                       toolkit_root() + "/lib64/libcublasLt.so"};
  EXPECT_EQ(cublaslt_library_candidates(), expected);
}

TEST(CublasLtLoader, LoadsHereOrSaysWhyTheSameWayEachTime) {
  std::string why;
  if (!cublaslt_available(&why)) {
    std::string again;
    EXPECT_FALSE(cublaslt_available(&again));
    EXPECT_EQ(why, again);  // the failure is kept
    GTEST_SKIP() << "SKIPPED: cuBLASLt is not available here: " << why;
  }
  const CublasLtApi& api = cublaslt();
  std::cout << "cuBLASLt " << api.version << " from " << api.library << "\n";
  EXPECT_EQ(api.version / 10000, 13u);
  EXPECT_EQ(&api, &cublaslt());
  EXPECT_EQ(describe_status(CUBLAS_STATUS_NOT_SUPPORTED).rfind("CUBLAS_STATUS_NOT_SUPPORTED (", 0), 0u)
      << describe_status(CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_THROW(check_cublas(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul"), InternalError);
  EXPECT_THROW(check_cublas(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate"), UserError);
  EXPECT_NO_THROW(check_cublas(CUBLAS_STATUS_SUCCESS, "cublasLtCreate"));
  try {
    check_cublas(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul(x)");
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("device cuda: cublasLtMatmul(x): CUBLAS_STATUS_INVALID_VALUE ("),
              std::string::npos)
        << e.what();
  }
}

TEST(CublasLtProblem, DescribeNamesShapesStridesAndOptions) {
  GemmProblem p = problem(DType::bf16, 7, 13, 29);
  EXPECT_EQ(describe(p), "bf16 batch 1: A[7,29] (stride 0) x B[29,13] (stride 0) -> D[7,13]");
  p.batch = 4;
  p.trans_a = true;
  p.trans_b = true;
  p.batch_stride_a = 203;
  p.residual = true;
  p.batch_stride_residual = 91;
  p.epilogue = GemmEpilogue::bias;
  p.alpha = 0.5f;
  p.pointer_alignment = 2;
  EXPECT_EQ(describe(p), "bf16 batch 4: A^T[29,7] (stride 203) x B^T[13,29] (stride 0) -> D[7,13], alpha 0.5, "
                         "epilogue bias, + R (stride 91), pointers aligned to 2");
  GemmProblem f = problem(DType::f32, 1, 1, 1);
  f.allow_tf32 = true;
  EXPECT_EQ(describe(f), "f32 batch 1: A[1,1] (stride 0) x B[1,1] (stride 0) -> D[1,1], tf32");
}

TEST(CublasLtProblem, BadProblemsAreInternalErrorsSayingWhy) {
  struct Bad {
    const char* why;
    void (*change)(GemmProblem&);
  };
  const Bad bad[] = {
      {"the dtype must be f32, bf16 or f16", [](GemmProblem& p) { p.dtype = DType::f64; }},
      {"the dtype must be f32, bf16 or f16", [](GemmProblem& p) { p.dtype = DType::i8; }},
      {"a negative size", [](GemmProblem& p) { p.m = -1; }},
      {"a negative size", [](GemmProblem& p) { p.batch = -2; }},
      {"a negative batch stride", [](GemmProblem& p) { p.batch_stride_b = -1; }},
      {"a size past 2^31 - 1", [](GemmProblem& p) { p.k = int64_t{1} << 31; }},
      {"TF32 is for f32 only", [](GemmProblem& p) { p.dtype = DType::bf16; p.allow_tf32 = true; }},
      {"a residual batch stride without a residual", [](GemmProblem& p) { p.batch_stride_residual = 91; }},
      {"which may turn NaN into 0", [](GemmProblem& p) { p.epilogue = GemmEpilogue::relu; }},
      {"which may turn NaN into 0", [](GemmProblem& p) { p.epilogue = GemmEpilogue::bias_relu; }},
      {"pointer_alignment must be a power of two", [](GemmProblem& p) { p.pointer_alignment = 12; }},
      {"pointer_alignment must be a power of two", [](GemmProblem& p) { p.pointer_alignment = 2; }},  // f32
      {"k == 0", [](GemmProblem& p) { p.k = 0; }},
      {"more elements than memory can hold", [](GemmProblem& p) { p.m = p.n = p.batch = int64_t{1} << 30; }},
  };
  for (const Bad& b : bad) {
    GemmProblem p = problem(DType::f32, 7, 13, 29);
    b.change(p);
    SCOPED_TRACE(b.why);
    try {
      validate(p);
      ADD_FAILURE() << "accepted " << describe(p);
    } catch (const InternalError& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("device cuda: cuBLASLt matmul " + describe(p) + ": "), std::string::npos) << message;
      EXPECT_NE(message.find(b.why), std::string::npos) << message;
    }
    EXPECT_THROW(column_major_shape(p), InternalError);
  }
  // Accepted: an empty D with k == 0 (nothing to write), and the ReLU epilogues when asked for knowingly.
  GemmProblem empty = problem(DType::f16, 0, 13, 0);
  EXPECT_NO_THROW(validate(empty));
  EXPECT_TRUE(is_empty(empty));
  GemmProblem relu = problem(DType::f32, 7, 13, 29);
  relu.epilogue = GemmEpilogue::bias_relu;
  relu.relu_may_clip_nan = true;
  EXPECT_NO_THROW(validate(relu));
}

void expect_layout(const LtLayout& l, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  EXPECT_EQ(l.rows, rows);
  EXPECT_EQ(l.cols, cols);
  EXPECT_EQ(l.ld, ld);
  EXPECT_EQ(l.batch_stride, stride);
}

// D = A B row-major is D^T = B^T A^T column-major: cuBLASLt's first operand is kiln's B.
TEST(CublasLtShape, RowMajorIsTheSwappedColumnMajorProduct) {
  GemmProblem p = problem(DType::f32, 7, 13, 29);
  LtShape s = column_major_shape(p);
  EXPECT_EQ(s.batch, 1);
  EXPECT_FALSE(s.folded);
  EXPECT_FALSE(s.trans_first);
  EXPECT_FALSE(s.trans_second);
  expect_layout(s.first, 13, 29, 13, 0);  // B [29,13] row-major = [13,29] column-major
  expect_layout(s.second, 29, 7, 29, 0);  // A [7,29] row-major = [29,7] column-major
  expect_layout(s.d, 13, 7, 13, 91);
  expect_layout(s.c, 13, 7, 13, 91);

  p.trans_a = p.trans_b = true;  // stored A^T [29,7] and B^T [13,29]
  s = column_major_shape(p);
  EXPECT_TRUE(s.trans_first);
  EXPECT_TRUE(s.trans_second);
  expect_layout(s.first, 29, 13, 29, 0);
  expect_layout(s.second, 7, 29, 7, 0);

  GemmProblem vec = problem(DType::f32, 5, 1, 1);  // size-1 dims keep ld >= rows
  s = column_major_shape(vec);
  expect_layout(s.first, 1, 1, 1, 0);
  expect_layout(s.second, 1, 5, 1, 0);
  expect_layout(s.d, 1, 5, 1, 5);
}

TEST(CublasLtShape, ASharedBWithDenseAFoldsTheBatchIntoRows) {
  GemmProblem p = problem(DType::bf16, 7, 13, 29);
  p.batch = 3;
  p.batch_stride_a = 7 * 29;
  p.residual = true;
  p.batch_stride_residual = 7 * 13;
  LtShape s = column_major_shape(p);
  EXPECT_TRUE(s.folded);
  EXPECT_EQ(s.batch, 1);
  expect_layout(s.second, 29, 21, 29, 7 * 29);
  expect_layout(s.d, 13, 21, 13, 91);
  expect_layout(s.c, 13, 21, 13, 91);

  // Not folded: A transposed, A shared, R shared, or B per batch.
  for (int variant = 0; variant < 4; ++variant) {
    GemmProblem q = p;
    if (variant == 0) q.trans_a = true;
    if (variant == 1) q.batch_stride_a = 0;
    if (variant == 2) q.batch_stride_residual = 0;
    if (variant == 3) q.batch_stride_b = 29 * 13;
    s = column_major_shape(q);
    EXPECT_FALSE(s.folded) << variant;
    EXPECT_EQ(s.batch, 3) << variant;
    EXPECT_EQ(s.second.batch_stride, q.batch_stride_a) << variant;
    EXPECT_EQ(s.first.batch_stride, q.batch_stride_b) << variant;
    EXPECT_EQ(s.c.batch_stride, q.batch_stride_residual) << variant;
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
