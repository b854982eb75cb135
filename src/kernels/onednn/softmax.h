// Softmax and LogSoftmax through oneDNN's softmax primitive (algorithms softmax_accurate and
// softmax_log), for compiled mode's library route (src/schedule/softmax_route.h). Primitives are
// cached per shape (thread-safe); calls may come from many threads at once.
//
// NaN: oneDNN 2.6 gives NaN only at the NaN or +inf positions of a row and 0 (log: -inf) elsewhere,
// and can lose a NaN entirely (a row of -inf ending in NaN came back all 0). ONNX, numpy and the
// eager kernel give NaN across any row whose max is not finite: a row holding NaN or +inf, or a row
// of all -inf. So each call also scans its input (one vectorised pass) and writes NaN over such
// rows; tests fail if the scan is removed.
// Accuracy: oneDNN's exp/log are not correctly rounded (LogSoftmax of a width-1 row gives 1.4e-6,
// not 0): within 2e-6 absolute of the fp64 result for log-softmax, a few ulp for softmax.
#pragma once
#include <cstdint>
#include <string>

namespace kiln::onednn {

// x and y plain row-major [outer, n, inner], not overlapping; normalised along n. Every size >= 1
// (callers handle zero-size tensors: this must not be called with them).
struct SoftmaxShape {
  int64_t outer = 1, n = 1, inner = 1;
};

// False when oneDNN has no implementation for the case (never seen for f32).
bool softmax_f32(const SoftmaxShape& shape, bool log, const float* x, float* y);

// The implementation oneDNN picks ("jit:avx512_core", "ref:any"): for benches and explanations.
std::string softmax_impl_name(const SoftmaxShape& shape, bool log);

// The NaN fix alone (what softmax_f32 does after oneDNN): rows of x whose max is not finite become
// NaN in y. Exposed for tests.
void softmax_nan_rows(const SoftmaxShape& shape, const float* x, float* y);

}  // namespace kiln::onednn
