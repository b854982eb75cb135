// Convolution and transposed convolution through oneDNN. The primitive picks its preferred (blocked)
// layouts; the caller's plain NC[D]HW buffers are reordered in and out around it. Weights are
// reordered on every call (a framework's eager mode does the same), which is small next to the
// convolution itself.
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "kernels/onednn/onednn.h"
#include "kernels/onednn/runtime.h"
#include "support/error.h"

namespace kiln::onednn {
namespace {

using namespace detail;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr int64_t kPlainDeconvBelowChannels = 8;

struct ConvEntry {
  bool implemented = false;
  dnnl::primitive prim;
  dnnl::memory::desc src_md, w_md, bias_md, dst_md, scratch_md;  // the primitive's layouts
  dnnl::memory::desc user_src_md, user_w_md, user_dst_md;        // the caller's plain layouts
  std::optional<PlannedReorder> src_in, w_in, dst_out;           // where the layouts differ
};

PrimitiveCache<ConvEntry>& conv_cache() {
  static PrimitiveCache<ConvEntry> cache;
  return cache;
}

dnnl::memory::dims spatial_minus_one(const std::vector<int64_t>& v) {
  dnnl::memory::dims r(v.begin(), v.end());
  for (auto& x : r) x -= 1;
  return r;
}

// Weights as oneDNN sees them: [G, OC/G, IC/G, k..] (or without G when groups == 1), with strides
// describing the caller's ONNX buffer. Conv: ONNX [OC, IC/G, k..]; ConvTranspose: ONNX [IC, OC/G, k..].
dnnl::memory::desc user_weights_md(const ConvDesc& d, bool transposed) {
  int64_t g = d.groups;
  size_t nsp = d.src_dims.size() - 2;
  int64_t ksize = 1;
  for (size_t i = 0; i < nsp; ++i) ksize *= d.weights_dims[2 + i];
  int64_t oc_g, ic_g, s_oc, s_ic, s_g;
  if (!transposed) {
    oc_g = d.weights_dims[0] / g;
    ic_g = d.weights_dims[1];
    s_ic = ksize;
    s_oc = ic_g * ksize;
    s_g = oc_g * s_oc;
  } else {
    ic_g = d.weights_dims[0] / g;
    oc_g = d.weights_dims[1];
    s_oc = ksize;
    s_ic = oc_g * ksize;
    s_g = ic_g * s_ic;
  }
  dnnl::memory::dims dims, strides;
  if (g > 1) {
    dims.push_back(g);
    strides.push_back(s_g);
  }
  dims.push_back(oc_g);
  strides.push_back(s_oc);
  dims.push_back(ic_g);
  strides.push_back(s_ic);
  int64_t acc = ksize;
  for (size_t i = 0; i < nsp; ++i) {
    dims.push_back(d.weights_dims[2 + i]);
    acc /= d.weights_dims[2 + i];
    strides.push_back(acc);
  }
  return dnnl::memory::desc(dims, dt::f32, strides);
}

std::shared_ptr<const ConvEntry> make_conv(const ConvDesc& d, bool has_bias, bool transposed) {
  auto e = std::make_shared<ConvEntry>();
  int rank = static_cast<int>(d.src_dims.size());
  e->user_src_md = dnnl::memory::desc(to_dims(d.src_dims), dt::f32, plain_tag(rank));
  e->user_dst_md = dnnl::memory::desc(to_dims(d.dst_dims), dt::f32, plain_tag(rank));
  e->user_w_md = user_weights_md(d, transposed);
  int64_t oc = d.dst_dims[1];
  dnnl::memory::desc bias_md = has_bias ? dnnl::memory::desc({oc}, dt::f32, tag::a) : dnnl::memory::desc();
  auto src_any = any_layout(e->user_src_md, dt::f32), w_any = any_layout(e->user_w_md, dt::f32),
       dst_any = any_layout(e->user_dst_md, dt::f32);
  // A transposed convolution with few output channels a group runs on the plain layouts: oneDNN's choice,
  // a blocked layout that pads the channels to 16, wrote 16x the output (this CPU, 2 threads, 2x2 stride 2
  // from 24 channels: 1 channel at 640x640 1.7 ms blocked against 0.49 plain, 4 at 640x640 1.6 against
  // 1.1, 3 at 224x224 from 64: 0.33 against 0.15; 8 or more: blocked faster, 0.34 against 3.3 at 8).
  if (transposed && d.dst_dims[1] / d.groups < kPlainDeconvBelowChannels) {
    src_any = e->user_src_md;
    dst_any = e->user_dst_md;
  }
  dnnl::memory::dims strides(d.strides.begin(), d.strides.end()), dil = spatial_minus_one(d.dilations);
  dnnl::memory::dims pl(d.pad_begin.begin(), d.pad_begin.end()), pr(d.pad_end.begin(), d.pad_end.end());
  try {
    dnnl::primitive_attr attr = user_scratchpad_attr();
    const dnnl::engine& eng = cpu_engine();
    if (!transposed) {
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           src_any, w_any, bias_md, dst_any, strides, dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, eng);
      e->src_md = pd.src_desc();
      e->w_md = pd.weights_desc();
      e->dst_md = pd.dst_desc();
      e->bias_md = pd.bias_desc();
      e->scratch_md = pd.scratchpad_desc();
      e->prim = dnnl::convolution_forward(pd);
    } else {
      dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::deconvolution_direct, src_any, w_any, bias_md, dst_any,
                                             strides, dil, pl, pr);
      dnnl::deconvolution_forward::primitive_desc pd(desc, attr, eng);
      e->src_md = pd.src_desc();
      e->w_md = pd.weights_desc();
      e->dst_md = pd.dst_desc();
      e->bias_md = pd.bias_desc();
      e->scratch_md = pd.scratchpad_desc();
      e->prim = dnnl::deconvolution_forward(pd);
    }
    if (e->src_md != e->user_src_md) e->src_in.emplace(e->user_src_md, e->src_md);
    if (e->w_md != e->user_w_md) e->w_in.emplace(e->user_w_md, e->w_md);
    if (e->dst_md != e->user_dst_md) e->dst_out.emplace(e->dst_md, e->user_dst_md);
    e->implemented = true;
  } catch (const dnnl::error&) {
    // The arguments were validated by the op; an error here means oneDNN cannot do this case.
    e->implemented = false;
  }
  return e;
}

bool run_conv(const ConvDesc& d, const float* src, const float* weights, const float* bias, float* dst,
              bool transposed) {
  size_t rank = d.src_dims.size();
  KILN_INTERNAL_CHECK(rank >= 3 && rank <= 5 && d.dst_dims.size() == rank && d.weights_dims.size() == rank &&
                          d.strides.size() == rank - 2 && d.dilations.size() == rank - 2 &&
                          d.pad_begin.size() == rank - 2 && d.pad_end.size() == rank - 2 && d.groups >= 1,
                      "onednn::conv: bad descriptor (rank {})", rank);
  Key key;
  key.push_back(transposed ? 3 : 2);  // kind tag
  key.push_back(bias != nullptr);
  key.push_back(d.groups);
  for (const auto* v : {&d.src_dims, &d.weights_dims, &d.dst_dims, &d.strides, &d.dilations, &d.pad_begin, &d.pad_end})
    key.insert(key.end(), v->begin(), v->end());
  auto e = conv_cache().get(key, [&] { return make_conv(d, bias != nullptr, transposed); });
  if (!e->implemented) return false;

  const dnnl::engine& eng = cpu_engine();
  dnnl::stream& s = thread_stream();
  dnnl::memory user_src(e->user_src_md, eng, const_cast<float*>(src));
  dnnl::memory user_w(e->user_w_md, eng, const_cast<float*>(weights));
  dnnl::memory user_dst(e->user_dst_md, eng, dst);
  dnnl::memory src_m = e->src_in ? e->src_in->into_thread_buffer(user_src, 0) : user_src;
  dnnl::memory w_m = e->w_in ? e->w_in->into_thread_buffer(user_w, 1) : user_w;
  dnnl::memory dst_m = e->dst_out ? dnnl::memory(e->dst_md, eng, thread_buffer(2, e->dst_md.get_size())) : user_dst;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src_m},
                                             {DNNL_ARG_WEIGHTS, w_m},
                                             {DNNL_ARG_DST, dst_m},
                                             {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->bias_md, eng, const_cast<float*>(bias)));
  e->prim.execute(s, args);
  if (e->dst_out) e->dst_out->run(dst_m, user_dst);
  s.wait();
  return true;
}

}  // namespace

bool conv_f32(const ConvDesc& d, const float* src, const float* weights, const float* bias, float* dst) {
  return run_conv(d, src, weights, bias, dst, false);
}

bool deconv_f32(const ConvDesc& d, const float* src, const float* weights, const float* bias, float* dst) {
  return run_conv(d, src, weights, bias, dst, true);
}

}  // namespace kiln::onednn
