// Pooling through oneDNN on the caller's plain NC[D]HW buffers (pooling is memory-bound: a layout
// reorder would cost as much as the pooling).
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>

#include "kernels/onednn/onednn.h"
#include "kernels/onednn/runtime.h"
#include "support/error.h"

namespace kiln::onednn {
namespace {

using namespace detail;
using dt = dnnl::memory::data_type;

struct PoolEntry {
  bool implemented = false;
  dnnl::pooling_v2_forward prim;
  dnnl::memory::desc src_md, dst_md, scratch_md;
};

PrimitiveCache<PoolEntry>& pool_cache() {
  static PrimitiveCache<PoolEntry> cache;
  return cache;
}

dnnl::algorithm pool_algorithm(PoolKind k) {
  switch (k) {
    case PoolKind::max: return dnnl::algorithm::pooling_max;
    case PoolKind::avg_include_pad: return dnnl::algorithm::pooling_avg_include_padding;
    case PoolKind::avg_exclude_pad: return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  return dnnl::algorithm::pooling_max;
}

std::shared_ptr<const PoolEntry> make_pool(const PoolDesc& d) {
  auto e = std::make_shared<PoolEntry>();
  int rank = static_cast<int>(d.src_dims.size());
  e->src_md = dnnl::memory::desc(to_dims(d.src_dims), dt::f32, plain_tag(rank));
  e->dst_md = dnnl::memory::desc(to_dims(d.dst_dims), dt::f32, plain_tag(rank));
  dnnl::memory::dims dil(d.dilations.begin(), d.dilations.end());
  for (auto& x : dil) x -= 1;
  try {
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, pool_algorithm(d.kind), e->src_md,
                                        e->dst_md, to_dims(d.strides), to_dims(d.kernel), dil, to_dims(d.pad_begin),
                                        to_dims(d.pad_end));
    dnnl::pooling_v2_forward::primitive_desc pd(desc, user_scratchpad_attr(), cpu_engine());
    // oneDNN's generic reference kernel is slower than the caller's own plain loop.
    if (std::string_view(pd.impl_info_str()).starts_with("ref")) return e;
    e->scratch_md = pd.scratchpad_desc();
    e->prim = dnnl::pooling_v2_forward(pd);
    e->implemented = true;
  } catch (const dnnl::error&) {
    e->implemented = false;  // validated by the op: oneDNN cannot do this case
  }
  return e;
}

}  // namespace

bool pool_f32(const PoolDesc& d, const float* src, float* dst) {
  size_t rank = d.src_dims.size();
  KILN_INTERNAL_CHECK(rank >= 3 && rank <= 5 && d.dst_dims.size() == rank && d.kernel.size() == rank - 2 &&
                          d.strides.size() == rank - 2 && d.dilations.size() == rank - 2 &&
                          d.pad_begin.size() == rank - 2 && d.pad_end.size() == rank - 2,
                      "onednn::pool_f32: bad descriptor (rank {})", rank);
  Key key;
  key.push_back(4);  // kind tag
  key.push_back(static_cast<int64_t>(d.kind));
  for (const auto* v : {&d.src_dims, &d.dst_dims, &d.kernel, &d.strides, &d.dilations, &d.pad_begin, &d.pad_end})
    key.insert(key.end(), v->begin(), v->end());
  auto e = pool_cache().get(key, [&] { return make_pool(d); });
  if (!e->implemented) return false;
  const dnnl::engine& eng = cpu_engine();
  dnnl::stream& s = thread_stream();
  dnnl::memory sm(e->src_md, eng, const_cast<float*>(src));
  dnnl::memory dm(e->dst_md, eng, dst);
  e->prim.execute(s, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_DST, dm}, {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}});
  s.wait();
  return true;
}

}  // namespace kiln::onednn
