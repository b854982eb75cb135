// Matrix products through oneDNN's matmul primitive on caller-strided f32 buffers (batched, broadcast,
// transposed operands all described by dims and strides).
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/onednn/onednn.h"
#include "kernels/onednn/runtime.h"
#include "support/error.h"

namespace kiln::onednn {
namespace {

using namespace detail;

struct MatmulEntry {
  bool implemented = false;
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md, scratch_md;
  bool single_threaded = false;  // splits_reduction_across_threads
};

PrimitiveCache<MatmulEntry>& matmul_cache() {
  static PrimitiveCache<MatmulEntry> cache;
  return cache;
}

std::shared_ptr<const MatmulEntry> make_matmul(const MatmulDesc& d) {
  auto e = std::make_shared<MatmulEntry>();
  using dt = dnnl::memory::data_type;
  e->a_md = dnnl::memory::desc(to_dims(d.a_dims), dt::f32, to_dims(d.a_strides));
  e->b_md = dnnl::memory::desc(to_dims(d.b_dims), dt::f32, to_dims(d.b_strides));
  e->c_md = dnnl::memory::desc(to_dims(d.c_dims), dt::f32, row_major_strides(d.c_dims));
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md), user_scratchpad_attr(),
                                    cpu_engine());
    e->scratch_md = pd.scratchpad_desc();
    e->single_threaded = splits_reduction_across_threads(pd);
    e->prim = dnnl::matmul(pd);
    e->implemented = true;
  } catch (const dnnl::error& err) {
    if (err.status != dnnl_unimplemented) throw;
  }
  return e;
}

}  // namespace

bool matmul_f32(const MatmulDesc& d, const float* a, const float* b, float* c) {
  size_t rank = d.c_dims.size();
  KILN_INTERNAL_CHECK(rank >= 2 && rank <= DNNL_MAX_NDIMS && d.a_dims.size() == rank && d.b_dims.size() == rank &&
                          d.a_strides.size() == rank && d.b_strides.size() == rank,
                      "onednn::matmul_f32: bad rank {}", rank);
  Key key;
  key.reserve(1 + 5 * rank);
  key.push_back(1);  // kind tag: matmul
  for (const auto* v : {&d.a_dims, &d.a_strides, &d.b_dims, &d.b_strides, &d.c_dims}) key.insert(key.end(), v->begin(), v->end());
  auto e = matmul_cache().get(key, [&] { return make_matmul(d); });
  if (!e->implemented) return false;

  const dnnl::engine& eng = cpu_engine();
  dnnl::memory am(e->a_md, eng, const_cast<float*>(a));
  dnnl::memory bm(e->b_md, eng, const_cast<float*>(b));
  dnnl::memory cm(e->c_md, eng, c);
  execute_primitive(e->prim, e->single_threaded,
                    {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm},
                     {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}});
  return true;
}

}  // namespace kiln::onednn
