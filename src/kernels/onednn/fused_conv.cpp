// Convolution with a fused epilogue. The primitive picks its layouts (format `any`); the constant
// weights are reordered into that layout once (PrepackedWeights), not per call as the eager wrapper
// does. Source and destination are reordered around the primitive when it wants a blocked layout;
// a residual is reordered straight into the destination buffer, where a sum post-op adds it. bf16
// operands: the weights are packed as bf16 once and the source rounded to bf16 in its reorder; the
// destination stays f32. Winograd (ConvAlgorithm): a second primitive per shape, the direct one made
// only when a call needs it (an input the transforms must not see, or no Winograd kernel).
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>

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
  dnnl::memory::desc user_src_md, user_dst_md, user_residual_md;  // the caller's f32 layouts
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

// Inputs and weights beyond these magnitudes (biased exponent fields) run the direct kernel: with
// |x| < 2^64 and |w| < 2^32 the Winograd transforms' sums stay far below f32's 2^128.
constexpr uint32_t kWinogradInputExponent = 127 + 64, kWinogradWeightExponent = 127 + 32;
constexpr int64_t kBlock = 16;  // nChw16c

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t x : dims) n *= x;
  return n;
}

// The caller's f32 layout of a tensor: plain NC[D]HW, or blocked nChw16c.
dnnl::memory::desc user_md(const std::vector<int64_t>& dims, bool blocked) {
  return dnnl::memory::desc(to_dims(dims), dnnl::memory::data_type::f32,
                            blocked ? tag::nChw16c : plain_tag(static_cast<int>(dims.size())));
}

bool winograd_shape(const ConvDesc& d) {
  return d.src_dims.size() == 4 && d.groups == 1 && d.weights_dims[2] == 3 && d.weights_dims[3] == 3 &&
         d.strides == std::vector<int64_t>{1, 1} && d.dilations == std::vector<int64_t>{1, 1};
}

}  // namespace

const char* conv_algorithm_name(ConvAlgorithm a) { return a == ConvAlgorithm::winograd ? "winograd" : "direct"; }

struct FusedConv::Impl {
  Epilogue epilogue;
  Operands operands = Operands::f32;
  ConvAlgorithm algorithm = ConvAlgorithm::direct;
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
    auto blockable = [&](const std::vector<int64_t>& dims) { return dims.size() == 4 && dims[1] % kBlock == 0; };
    KILN_INTERNAL_CHECK((!c.blocked_src || blockable(d.src_dims)) && (!(c.blocked_dst || c.blocked_residual) ||
                                                                      blockable(d.dst_dims)),
                        "FusedConv: a blocked tensor needs 2-D and channels in blocks of {}", kBlock);
  }

  Key key(const Call& c, ConvAlgorithm algo) const {
    const ConvDesc& d = c.desc;
    Key k{102, c.steps, static_cast<int64_t>(algo), c.blocked_src, c.blocked_residual, c.blocked_dst};
    for (const auto* v : {&d.src_dims, &d.dst_dims, &d.strides, &d.dilations, &d.pad_begin, &d.pad_end})
      k.insert(k.end(), v->begin(), v->end());
    return k;
  }

  std::shared_ptr<const ConvEntry> make(const Call& c, ConvAlgorithm algo) const {
    const ConvDesc& d = c.desc;
    auto e = std::make_shared<ConvEntry>();
    if (algo == ConvAlgorithm::winograd && !winograd_shape(d)) return e;  // not implemented
    e->user_src_md = user_md(d.src_dims, c.blocked_src);
    e->user_dst_md = user_md(d.dst_dims, c.blocked_dst);
    e->user_residual_md = user_md(d.dst_dims, c.blocked_residual);
    const dt op = operand_type(operands);
    // A blocked tensor fixes the primitive's layout for it (no reorder); a plain one lets it choose.
    const dnnl::memory::desc src_md = c.blocked_src && op == dt::f32 ? e->user_src_md : any_layout(e->user_src_md, op);
    const dnnl::memory::desc dst_md = c.blocked_dst ? e->user_dst_md : any_layout(e->user_dst_md, dt::f32);
    dnnl::memory::desc w_any(weights_view(weights_dims, groups), op, tag::any);
    dnnl::memory::dims strides(d.strides.begin(), d.strides.end()), dil(d.dilations.begin(), d.dilations.end());
    for (auto& x : dil) x -= 1;  // oneDNN counts the gaps between taps
    dnnl::memory::dims pl(d.pad_begin.begin(), d.pad_begin.end()), pr(d.pad_end.begin(), d.pad_end.end());
    e->plan = plan_post_ops(epilogue, c.steps, e->user_dst_md, 1, /*residual_as_sum=*/true);
    dnnl::memory::desc bias_md;
    if (e->plan.native_bias) bias_md = dnnl::memory::desc({weights_dims[0]}, dt::f32, tag::a);
    e->plan.bias_md = bias_md;
    try {
      const dnnl::algorithm alg = algo == ConvAlgorithm::winograd ? dnnl::algorithm::convolution_winograd
                                                                   : dnnl::algorithm::convolution_direct;
      auto primitive = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
        dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src, w_any, bias_md, dst,
                                             strides, dil, pl, pr);
        return dnnl::convolution_forward::primitive_desc(desc, e->plan.attr, cpu_engine());
      };
      dnnl::convolution_forward::primitive_desc pd = primitive(src_md, dst_md);
      // Fixed blocked layouts must not cost the fast kernel: oneDNN's reference one is 100x slower than
      // the reorders to the layouts it would choose.
      if ((c.blocked_src || c.blocked_dst) && std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
        pd = primitive(any_layout(e->user_src_md, op), any_layout(e->user_dst_md, dt::f32));
      e->src_md = pd.src_desc();
      e->dst_md = pd.dst_desc();
      e->scratch_md = pd.scratchpad_desc();
      e->prim = dnnl::convolution_forward(pd);
      if (e->src_md != e->user_src_md) e->src_in.emplace(e->user_src_md, e->src_md);
      if (e->dst_md != e->user_dst_md) e->dst_out.emplace(e->dst_md, e->user_dst_md);
      if (epilogue.residual && c.steps > kStepResidual && e->dst_md != e->user_residual_md)
        e->residual_in.emplace(e->user_residual_md, e->dst_md);
      e->weights = weights->get(pd.weights_desc());
      e->implemented = true;
    } catch (const dnnl::error& err) {
      if (err.status != dnnl_unimplemented) throw;
    }
    return e;
  }

  std::shared_ptr<const ConvEntry> entry(const Call& c, ConvAlgorithm algo) {
    check(c);
    return cache.get(key(c, algo), [&] { return make(c, algo); });
  }

  // The primitive this call runs on: Winograd where asked, implemented and the input is safe for it.
  std::shared_ptr<const ConvEntry> entry_for_run(const Call& c) {
    if (algorithm == ConvAlgorithm::winograd) {
      const uint32_t exponent = c.src_max_exponent >= 0 ? uint32_t(c.src_max_exponent)
                                                        : max_exponent_field(c.src, numel(c.desc.src_dims));
      if (exponent < kWinogradInputExponent) {
        auto e = entry(c, ConvAlgorithm::winograd);
        if (e->implemented) return e;
      }
    }
    return entry(c, ConvAlgorithm::direct);
  }
};

FusedConv::FusedConv(std::vector<int64_t> weights_dims, int64_t groups, std::shared_ptr<const void> owner,
                     const float* w, Epilogue epilogue, Operands operands, ConvAlgorithm algorithm)
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
  const bool winograd_ok =
      operands == Operands::f32 && max_exponent_field(w, numel(weights_dims)) < kWinogradWeightExponent;
  impl_->algorithm = winograd_ok ? algorithm : ConvAlgorithm::direct;
  dnnl::memory::dims view = weights_view(weights_dims, groups);
  dnnl::memory::desc user(view, dt::f32, row_major_strides(std::vector<int64_t>(view.begin(), view.end())));
  impl_->weights = std::make_unique<PrepackedWeights>(user, std::move(owner), w);
}

FusedConv::~FusedConv() = default;

const Epilogue& FusedConv::epilogue() const { return impl_->epilogue; }

ConvAlgorithm FusedConv::algorithm() const { return impl_->algorithm; }

bool FusedConv::prepare(const Call& shape_only) const { return impl_->entry(shape_only, impl_->algorithm)->implemented; }

bool FusedConv::run(const Call& c) const {
  auto e = impl_->entry_for_run(c);
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
      e->residual_in->run(dnnl::memory(e->user_residual_md, eng, const_cast<float*>(c.residual)), dst_m);
    else
      std::memcpy(dst_m.get_data_handle(), c.residual, e->user_residual_md.get_size());
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
  if (c.steps < kNumEpilogueSteps) apply_epilogue(c, c.steps);
  return true;
}

void FusedConv::apply_epilogue(const Call& c, int from) const {
  const Epilogue& ep = impl_->epilogue;
  const std::vector<int64_t>& dims = c.desc.dst_dims;
  const int64_t n = numel(dims), inner = numel(std::vector<int64_t>(dims.begin() + 2, dims.end()));
  const float* residual = c.residual;
  if (ep.residual && from <= kStepResidual && c.blocked_residual != c.blocked_dst) {  // the residual in dst's layout
    const dnnl::engine& eng = cpu_engine();
    const dnnl::memory::desc to_md = user_md(dims, c.blocked_dst);
    dnnl::memory from_m(user_md(dims, c.blocked_residual), eng, const_cast<float*>(c.residual));
    dnnl::memory to_m(to_md, eng, thread_buffer(3, to_md.get_size()));
    dnnl::stream& s = thread_stream();
    dnnl::reorder(from_m, to_m).execute(s, from_m, to_m);
    s.wait();
    residual = static_cast<const float*>(to_m.get_data_handle());
  }
  apply_epilogue_plain(ep, from, c.dst, n, inner, dims[1], residual, c.blocked_dst ? kBlock : 1);
}

}  // namespace kiln::onednn
