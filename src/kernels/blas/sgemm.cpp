#include "kernels/blas/sgemm.h"

#include <cblas.h>
#include <omp.h>

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
  auto one = [&](int64_t i) {
    cblas_sgemm(CblasRowMajor, c.trans_a ? CblasTrans : CblasNoTrans, c.trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                c.alpha, c.a + i * c.stride_a, lda, c.b + i * c.stride_b, ldb, 0.0f, c.c + i * c.stride_c, n);
  };
  // Enough matrices for every thread: one matrix per thread at a time (OpenBLAS runs single-threaded
  // inside a parallel region); otherwise each product on all threads.
  if (c.batch >= omp_get_max_threads() && c.batch > 1) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < c.batch; ++i) one(i);
  } else {
    for (int64_t i = 0; i < c.batch; ++i) one(i);
  }
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
