// GemmProblem (cublaslt.h): describing and checking one, and its column-major form for cuBLASLt.
#include <bit>
#include <limits>

#include "backend/cuda/cublaslt.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

bool has_relu(GemmEpilogue e) { return e == GemmEpilogue::relu || e == GemmEpilogue::bias_relu; }
size_t element_bytes(DType t) { return t == DType::f32 ? 4 : 2; }
bool product_fits(int64_t a, int64_t b, int64_t limit) { return a == 0 || b <= limit / a; }

// Own names (not kiln_ir's dtype_name): kiln_cuda links only kiln_support.
std::string_view type_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    default: return "unsupported-dtype";
  }
}

}  // namespace

std::string_view epilogue_name(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::none: return "none";
    case GemmEpilogue::relu: return "relu";
    case GemmEpilogue::bias: return "bias";
    case GemmEpilogue::bias_relu: return "bias_relu";
  }
  return "?";
}

std::string describe(const GemmProblem& p) {
  std::string a = p.trans_a ? fmt::format("A^T[{},{}]", p.k, p.m) : fmt::format("A[{},{}]", p.m, p.k);
  std::string b = p.trans_b ? fmt::format("B^T[{},{}]", p.n, p.k) : fmt::format("B[{},{}]", p.k, p.n);
  std::string text = fmt::format("{} batch {}: {} (stride {}) x {} (stride {}) -> D[{},{}]", type_name(p.dtype),
                                 p.batch, a, p.batch_stride_a, b, p.batch_stride_b, p.m, p.n);
  if (p.alpha != 1.0f) text += fmt::format(", alpha {}", p.alpha);
  if (p.epilogue != GemmEpilogue::none) text += fmt::format(", epilogue {}", epilogue_name(p.epilogue));
  if (p.residual) text += fmt::format(", + R (stride {})", p.batch_stride_residual);
  if (p.allow_tf32) text += ", tf32";
  if (p.pointer_alignment != 256) text += fmt::format(", pointers aligned to {}", p.pointer_alignment);
  return text;
}

bool is_empty(const GemmProblem& p) { return p.batch == 0 || p.m == 0 || p.n == 0; }

void validate(const GemmProblem& p) {
  auto refuse = [&](std::string_view why) {
    internal_error("device cuda: cuBLASLt matmul {}: {}", describe(p), why);
  };
  if (!is_f32_or_half(p.dtype)) refuse("the dtype must be f32, bf16 or f16");
  if (p.batch < 0 || p.m < 0 || p.n < 0 || p.k < 0) refuse("a negative size");
  if (p.batch_stride_a < 0 || p.batch_stride_b < 0 || p.batch_stride_residual < 0) refuse("a negative batch stride");
  if (p.batch > kInt32Max || p.m > kInt32Max || p.n > kInt32Max || p.k > kInt32Max) {
    refuse("a size past 2^31 - 1 (cuBLASLt's layouts are int32)");
  }
  const int64_t limit = std::numeric_limits<int64_t>::max() / 8;  // element counts stay byte-addressable
  if (!product_fits(p.m, p.k, limit) || !product_fits(p.k, p.n, limit) || !product_fits(p.m, p.n, limit) ||
      !product_fits(p.batch, p.m * p.n, limit)) {
    refuse("more elements than memory can hold");
  }
  if (p.allow_tf32 && p.dtype != DType::f32) refuse("TF32 is for f32 only");
  if (!p.residual && p.batch_stride_residual != 0) refuse("a residual batch stride without a residual");
  if (has_relu(p.epilogue) && !p.relu_may_clip_nan) {
    refuse("cuBLASLt's ReLU epilogue is max(x, 0), which may turn NaN into 0 where ONNX Relu(NaN) is NaN; "
           "apply ReLU in a kiln kernel (or set relu_may_clip_nan)");
  }
  if (!std::has_single_bit(p.pointer_alignment) || p.pointer_alignment < element_bytes(p.dtype)) {
    refuse("pointer_alignment must be a power of two, at least the element size");
  }
  if (p.k == 0 && !is_empty(p)) {
    refuse("k == 0 (cuBLASLt has no empty-sum matmul: D is bias + R, or 0, which the backend writes itself)");
  }
}

LtShape column_major_shape(const GemmProblem& p) {
  validate(p);
  // Shared B with dense consecutive A, R and D: row b*m + i of the stacked A gives row b*m + i of D.
  bool fold = p.batch > 1 && p.batch_stride_b == 0 && !p.trans_a && p.batch_stride_a == p.m * p.k &&
              (!p.residual || p.batch_stride_residual == p.m * p.n) && product_fits(p.batch, p.m, kInt32Max);
  const int64_t m = fold ? p.batch * p.m : p.m;
  LtShape s;
  s.batch = fold ? 1 : p.batch;
  s.folded = fold;
  // kiln's B (row-major [k, n], or [n, k] stored when trans_b) read column-major is B^T [n, k] (or B [k, n]).
  s.trans_first = p.trans_b;
  s.first = p.trans_b ? LtLayout{p.k, p.n, p.k, p.batch_stride_b} : LtLayout{p.n, p.k, p.n, p.batch_stride_b};
  // kiln's A (row-major [m, k], or [k, m] stored when trans_a) read column-major is A^T [k, m] (or A [m, k]).
  s.trans_second = p.trans_a;
  s.second = p.trans_a ? LtLayout{p.m, p.k, p.m, p.batch_stride_a} : LtLayout{p.k, m, p.k, p.batch_stride_a};
  // D and R row-major [m, n] are column-major [n, m] with ld n.
  s.d = LtLayout{p.n, m, p.n, p.m * p.n};
  s.c = p.residual ? LtLayout{p.n, m, p.n, p.batch_stride_residual} : s.d;
  return s;
}

}  // namespace kiln::backend::cuda
