// Convolution with a fused epilogue. The primitive picks its layouts (format `any`); the constant
// weights are reordered into that layout once (PrepackedWeights), not per call as the eager wrapper
// does. Source and destination are reordered around the primitive when it wants a blocked layout;
// a residual is reordered straight into the destination buffer, where a sum post-op adds it. bf16
// operands: the weights are packed as bf16 once and the source rounded to bf16 in its reorder; the
// destination stays f32.
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "kernels/onednn/fused_detail.h"
#include "support/error.h"

namespace kiln::onednn {

using namespace detail;

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct ConvEntry {
  bool implemented = false;
  dnnl::convolution_forward prim;
  dnnl::memory::desc src_md, dst_md, scratch_md;  // the primitive's layouts
  dnnl::memory::desc user_src_md, user_dst_md;    // the caller's plain f32 layouts
  std::optional<PlannedReorder> src_in, dst_out, residual_in;  // where the layouts (or types) differ
  PostOpPlan plan;
  std::shared_ptr<const dnnl::memory> weights;
};

// Weights as oneDNN sees them: [G, OC/G, IC/G, k..] (or without G when groups == 1); the ONNX buffer
// [OC, IC/G, k..] is row-major in either view.
dnnl::memory::dims weights_view(const std::vector<int64_t>& w, int64_t groups) {
  dnnl::memory::dims dims;
  if (groups > 1) {
    dims.push_back(groups);
    dims.push_back(w[0] / groups);
  } else {
    dims.push_back(w[0]);
  }
  dims.insert(dims.end(), w.begin() + 1, w.end());
  return dims;
}

}  // namespace

struct FusedConv::Impl {
  Epilogue epilogue;
  Operands operands = Operands::f32;
  std::vector<int64_t> weights_dims;
  int64_t groups = 1;
  std::unique_ptr<PrepackedWeights> weights;
  PrimitiveCache<ConvEntry> cache;

  void check(const Call& c) const {
    const ConvDesc& d = c.desc;
    size_t rank = d.src_dims.size();
    KILN_INTERNAL_CHECK(rank >= 3 && rank <= 5 && d.dst_dims.size() == rank && d.weights_dims == weights_dims &&
                            d.groups == groups && d.strides.size() == rank - 2 && d.dilations.size() == rank - 2 &&
                            d.pad_begin.size() == rank - 2 && d.pad_end.size() == rank - 2,
                        "FusedConv: bad descriptor (rank {})", rank);
    KILN_INTERNAL_CHECK(c.steps >= 0 && c.steps <= kNumEpilogueSteps, "FusedConv: bad steps {}", c.steps);
  }

  Key key(const Call& c) const {
    const ConvDesc& d = c.desc;
    Key k{102, c.steps};
    for (const auto* v : {&d.src_dims, &d.dst_dims, &d.strides, &d.dilations, &d.pad_begin, &d.pad_end})
      k.insert(k.end(), v->begin(), v->end());
    return k;
  }

  std::shared_ptr<const ConvEntry> make(const Call& c) const {
    const ConvDesc& d = c.desc;
    auto e = std::make_shared<ConvEntry>();
    int rank = static_cast<int>(d.src_dims.size());
    e->user_src_md = dnnl::memory::desc(to_dims(d.src_dims), dt::f32, plain_tag(rank));
    e->user_dst_md = dnnl::memory::desc(to_dims(d.dst_dims), dt::f32, plain_tag(rank));
    const dt op = operand_type(operands);
    dnnl::memory::desc w_any(weights_view(weights_dims, groups), op, tag::any);
    dnnl::memory::dims strides(d.strides.begin(), d.strides.end()), dil(d.dilations.begin(), d.dilations.end());
    for (auto& x : dil) x -= 1;  // oneDNN counts the gaps between taps
    dnnl::memory::dims pl(d.pad_begin.begin(), d.pad_begin.end()), pr(d.pad_end.begin(), d.pad_end.end());
    e->plan = plan_post_ops(epilogue, c.steps, e->user_dst_md, 1, /*residual_as_sum=*/true);
    dnnl::memory::desc bias_md;
    if (e->plan.native_bias) bias_md = dnnl::memory::desc({weights_dims[0]}, dt::f32, tag::a);
    e->plan.bias_md = bias_md;
    try {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           any_layout(e->user_src_md, op), w_any, bias_md,
                                           any_layout(e->user_dst_md, dt::f32),
                                           strides, dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(desc, e->plan.attr, cpu_engine());
      e->src_md = pd.src_desc();
      e->dst_md = pd.dst_desc();
      e->scratch_md = pd.scratchpad_desc();
      e->prim = dnnl::convolution_forward(pd);
      if (e->src_md != e->user_src_md) e->src_in.emplace(e->user_src_md, e->src_md);
      if (e->dst_md != e->user_dst_md) {
        e->dst_out.emplace(e->dst_md, e->user_dst_md);
        if (epilogue.residual && c.steps > kStepResidual) e->residual_in.emplace(e->user_dst_md, e->dst_md);
      }
      e->weights = weights->get(pd.weights_desc());
      e->implemented = true;
    } catch (const dnnl::error& err) {
      if (err.status != dnnl_unimplemented) throw;
    }
    return e;
  }

  std::shared_ptr<const ConvEntry> entry(const Call& c) {
    check(c);
    return cache.get(key(c), [&] { return make(c); });
  }
};

FusedConv::FusedConv(std::vector<int64_t> weights_dims, int64_t groups, std::shared_ptr<const void> owner,
                     const float* w, Epilogue epilogue, Operands operands)
    : impl_(std::make_unique<Impl>()) {
  KILN_INTERNAL_CHECK(weights_dims.size() >= 3 && weights_dims.size() <= 5 && groups >= 1 &&
                          weights_dims[0] % groups == 0 && epilogue.alpha == 1.f,
                      "FusedConv: bad weights or epilogue");
  KILN_INTERNAL_CHECK(epilogue.bias.empty() || static_cast<int64_t>(epilogue.bias.size()) == weights_dims[0],
                      "FusedConv: bias size");
  impl_->epilogue = std::move(epilogue);
  impl_->operands = operands;
  impl_->weights_dims = weights_dims;
  impl_->groups = groups;
  dnnl::memory::dims view = weights_view(weights_dims, groups);
  dnnl::memory::desc user(view, dt::f32, row_major_strides(std::vector<int64_t>(view.begin(), view.end())));
  impl_->weights = std::make_unique<PrepackedWeights>(user, std::move(owner), w);
}

FusedConv::~FusedConv() = default;

const Epilogue& FusedConv::epilogue() const { return impl_->epilogue; }

bool FusedConv::prepare(const Call& shape_only) const { return impl_->entry(shape_only)->implemented; }

bool FusedConv::run(const Call& c) const {
  auto e = impl_->entry(c);
  if (!e->implemented) return false;
  bool residual = impl_->epilogue.residual && c.steps > kStepResidual;
  KILN_INTERNAL_CHECK(!residual || c.residual, "FusedConv: residual missing");
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory user_src(e->user_src_md, eng, const_cast<float*>(c.src));
  dnnl::memory user_dst(e->user_dst_md, eng, c.dst);
  dnnl::memory src_m = e->src_in ? e->src_in->into_thread_buffer(user_src, 0) : user_src;
  dnnl::memory dst_m = e->dst_out ? dnnl::memory(e->dst_md, eng, thread_buffer(2, e->dst_md.get_size())) : user_dst;
  if (residual) {  // the sum post-op adds what the destination holds
    if (e->residual_in)
      e->residual_in->run(dnnl::memory(e->user_dst_md, eng, const_cast<float*>(c.residual)), dst_m);
    else
      std::memcpy(c.dst, c.residual, e->user_dst_md.get_size());
  }
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src_m},
                                             {DNNL_ARG_WEIGHTS, *e->weights},
                                             {DNNL_ARG_DST, dst_m},
                                             {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}};
  if (e->plan.native_bias)
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->plan.bias_md, eng, const_cast<float*>(impl_->epilogue.bias.data())));
  dnnl::stream& s = thread_stream();
  e->prim.execute(s, args);
  if (e->dst_out) e->dst_out->run(dst_m, user_dst);
  s.wait();
  return true;
}

}  // namespace kiln::onednn
