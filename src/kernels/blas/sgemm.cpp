#include "kernels/blas/sgemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "support/error.h"

namespace kiln::blas {

bool fits(const SgemmCall& c) {
  auto small = [](int64_t v) { return v >= 0 && v <= INT_MAX; };
  return small(c.m) && small(c.n) && small(c.k) && c.batch >= 0;
}

void sgemm(const SgemmCall& c) {
  KILN_INTERNAL_CHECK(fits(c), "blas::sgemm: {}x{}x{} exceeds OpenBLAS's int", c.m, c.n, c.k);
  if (c.batch == 0 || c.m == 0 || c.n == 0) return;
  const auto m = static_cast<blasint>(c.m), n = static_cast<blasint>(c.n), k = static_cast<blasint>(c.k);
  const blasint lda = c.trans_a ? m : k, ldb = c.trans_b ? k : n;
  // Fixed tasks of one matrix and kColumnBlock output columns, each a single-threaded OpenBLAS call
  // (OpenBLAS runs single-threaded inside a parallel region, and with one thread there is nothing to
  // split): the bits then do not depend on the thread count. OpenBLAS's own threading does change
  // them (measured on its Haswell kernels: 8x1000x64 and 128^3 differ between 1 and 2 threads).
  constexpr int64_t kColumnBlock = 128;
  const int64_t blocks = (c.n + kColumnBlock - 1) / kColumnBlock, tasks = c.batch * blocks;
  auto task = [&](int64_t t) {
    const int64_t i = t / blocks, j0 = t % blocks * kColumnBlock;
    const auto width = static_cast<blasint>(std::min(kColumnBlock, c.n - j0));
    const float* b = c.b + i * c.stride_b + (c.trans_b ? j0 * c.k : j0);
    cblas_sgemm(CblasRowMajor, c.trans_a ? CblasTrans : CblasNoTrans, c.trans_b ? CblasTrans : CblasNoTrans, m, width,
                k, c.alpha, c.a + i * c.stride_a, lda, b, ldb, 0.0f, c.c + i * c.stride_c + j0, n);
  };
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) task(t);
}

std::string version() {
  std::istringstream words(openblas_get_config());  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"
  std::string name, number, word, core;
  words >> name >> number;
  while (words >> word)
    if (word.find('=') == std::string::npos && word.find('_') == std::string::npos) core = word;
  return "openblas " + number + (core.empty() ? "" : " " + core);
}

}  // namespace kiln::blas
