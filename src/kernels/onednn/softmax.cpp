// oneDNN softmax_v2 (softmax_accurate / softmax_log) on plain [outer, n, inner] buffers, then the
// NaN fix for rows whose max is not finite (see softmax.h).
#include "kernels/onednn/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/onednn/runtime.h"
#include "support/error.h"

namespace kiln::onednn {
namespace {

using namespace detail;
using dt = dnnl::memory::data_type;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kParallelElements = 32768;  // smaller calls scan on the calling thread
constexpr int64_t kColumnChunk = 256;         // inner > 1: columns scanned together

struct SoftmaxEntry {
  bool implemented = false;
  dnnl::softmax_v2_forward prim;
  dnnl::memory::desc md, scratch_md;
  std::string impl;
};

PrimitiveCache<SoftmaxEntry>& softmax_cache() {
  static PrimitiveCache<SoftmaxEntry> cache;
  return cache;
}

std::shared_ptr<const SoftmaxEntry> make_softmax(const SoftmaxShape& s, bool log) {
  auto e = std::make_shared<SoftmaxEntry>();
  // inner == 1 (the common case) as a 2-D [outer, n], so oneDNN sees a dense last axis.
  e->md = s.inner == 1 ? dnnl::memory::desc({s.outer, s.n}, dt::f32, dnnl::memory::format_tag::ab)
                       : dnnl::memory::desc({s.outer, s.n, s.inner}, dt::f32, dnnl::memory::format_tag::abc);
  try {
    dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_inference,
                                        log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, e->md,
                                        e->md, 1);
    dnnl::softmax_v2_forward::primitive_desc pd(desc, user_scratchpad_attr(), cpu_engine());
    e->scratch_md = pd.scratchpad_desc();
    e->impl = pd.impl_info_str();
    e->prim = dnnl::softmax_v2_forward(pd);
    e->implemented = true;
  } catch (const dnnl::error& err) {
    if (err.status != dnnl_unimplemented) throw;
  }
  return e;
}

std::shared_ptr<const SoftmaxEntry> entry(const SoftmaxShape& s, bool log) {
  KILN_INTERNAL_CHECK(s.outer >= 1 && s.n >= 1 && s.inner >= 1, "onednn::softmax_f32: empty shape [{},{},{}]", s.outer,
                      s.n, s.inner);
  Key key{7, log ? 1 : 0, s.outer, s.n, s.inner};
  return softmax_cache().get(key, [&] { return make_softmax(s, log); });
}

// A row's max is not finite: it holds NaN or +inf, or every value is -inf.
__attribute__((target_clones("avx512f", "avx2", "default"))) bool row_max_not_finite(const float* x, int64_t n) {
  int nan_or_inf = 0, above_neg_inf = 0;
#pragma omp simd reduction(| : nan_or_inf, above_neg_inf)
  for (int64_t i = 0; i < n; ++i) {
    nan_or_inf |= !(x[i] < kInf);
    above_neg_inf |= x[i] > -kInf;
  }
  return nan_or_inf || !above_neg_inf;
}

// The same per column j of a [n, inner] block, for columns [j0, j0 + cnt).
__attribute__((target_clones("avx512f", "avx2", "default"))) void columns_max_not_finite(const float* x, int64_t n,
                                                                                      int64_t inner, int64_t cnt,
                                                                                      int* bad) {
  int nan_or_inf[kColumnChunk] = {}, above_neg_inf[kColumnChunk] = {};
  for (int64_t i = 0; i < n; ++i) {
    const float* xr = x + i * inner;
#pragma omp simd
    for (int64_t j = 0; j < cnt; ++j) {
      nan_or_inf[j] |= !(xr[j] < kInf);
      above_neg_inf[j] |= xr[j] > -kInf;
    }
  }
  for (int64_t j = 0; j < cnt; ++j) bad[j] = nan_or_inf[j] || !above_neg_inf[j];
}

}  // namespace

void softmax_nan_rows(const SoftmaxShape& s, const float* x, float* y) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t n = s.n, inner = s.inner;
  const bool parallel = s.outer * n * inner >= kParallelElements;
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t r = 0; r < s.outer; ++r)
      if (row_max_not_finite(x + r * n, n)) std::fill_n(y + r * n, n, nan);
    return;
  }
  const int64_t chunks = (inner + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < s.outer * chunks; ++t) {
    const int64_t o = t / chunks, j0 = (t % chunks) * kColumnChunk;
    const int64_t cnt = std::min(kColumnChunk, inner - j0);
    int bad[kColumnChunk];
    columns_max_not_finite(x + o * n * inner + j0, n, inner, cnt, bad);
    for (int64_t j = 0; j < cnt; ++j)
      if (bad[j])
        for (int64_t i = 0; i < n; ++i) y[o * n * inner + i * inner + j0 + j] = nan;
  }
}

bool softmax_f32(const SoftmaxShape& s, bool log, const float* x, float* y) {
  auto e = entry(s, log);
  if (!e->implemented) return false;
  const dnnl::engine& eng = cpu_engine();
  dnnl::stream& st = thread_stream();
  dnnl::memory src(e->md, eng, const_cast<float*>(x));
  dnnl::memory dst(e->md, eng, y);
  e->prim.execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}});
  st.wait();
  softmax_nan_rows(s, x, y);
  return true;
}

std::string softmax_impl_name(const SoftmaxShape& s, bool log) {
  auto e = entry(s, log);
  return e->implemented ? e->impl : std::string();
}

}  // namespace kiln::onednn
