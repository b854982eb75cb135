// The epilogue of the fused library calls: its oneDNN post-op chain, its plain (ONNX-exact) form for
// the steps oneDNN must not do, the non-finite scan that decides between them, and prepacked weights.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/onednn/fused_detail.h"
#include "support/error.h"
#include "support/packed_weights.h"
#include "support/page_out.h"

namespace kiln::onednn {
namespace {

using namespace detail;

dnnl::algorithm eltwise_algorithm(Activation a) {
  switch (a) {
    case Activation::relu: return dnnl::algorithm::eltwise_relu;
    case Activation::tanh: return dnnl::algorithm::eltwise_tanh;
    case Activation::sigmoid: return dnnl::algorithm::eltwise_logistic;
    case Activation::gelu_erf: return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::gelu_tanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::silu: return dnnl::algorithm::eltwise_swish;  // alpha 1: x * sigmoid(x)
    case Activation::hard_swish: return dnnl::algorithm::eltwise_hardswish;
    case Activation::none: break;
  }
  internal_error("fused epilogue: no oneDNN algorithm for activation {}", static_cast<int>(a));
}

// The ONNX decompositions the matcher recognises, in f32 (as the eager nodes compute them).
float activate(Activation a, float x) {
  switch (a) {
    case Activation::none: return x;
    case Activation::relu: return x < 0.f ? 0.f : x;  // NaN stays NaN
    case Activation::tanh: return std::tanh(x);
    case Activation::sigmoid: return 1.f / (1.f + std::exp(-x));
    case Activation::gelu_erf: return x * (1.f + std::erf(x / 1.41421356f)) * 0.5f;
    case Activation::gelu_tanh: {
      float inner = (x + 0.044715f * (x * x * x)) * 0.797884561f;
      return x * 0.5f * (1.f + std::tanh(inner));
    }
    case Activation::silu: return x * (1.f / (1.f + std::exp(-x)));
    case Activation::hard_swish: {  // Max and Min keep NaN (ONNX)
      const float h = x * (1.f / 6.f) + 0.5f;
      return std::isnan(h) ? h : x * std::max(std::min(h, 1.f), 0.f);
    }
  }
  return x;
}

// oneDNN's alpha for an activation: swish scales its sigmoid's argument by it.
float eltwise_alpha(Activation a) { return a == Activation::silu ? 1.f : 0.f; }

__attribute__((target_clones("avx512f", "avx2", "default")))
uint32_t max_exponent_bits(const float* x, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t e = std::bit_cast<uint32_t>(x[i]) & 0x7f800000u;
    m = e > m ? e : m;
  }
  return m;
}

}  // namespace

int first_nan_unsafe_step(const Epilogue& e) {
  if (e.act == Activation::relu) return kStepAct;
  if (e.act_after == Activation::relu) return kStepActAfter;
  return kNumEpilogueSteps;
}

void apply_epilogue_plain(const Epilogue& e, int from, float* y, int64_t n, int64_t inner, int64_t channels,
                          const float* residual, int64_t block) {
  if (from >= kNumEpilogueSteps || n == 0) return;
  KILN_INTERNAL_CHECK(inner >= 1 && channels >= 1 && block >= 1 && channels % block == 0,
                      "apply_epilogue_plain: inner {} channels {} block {}", inner, channels, block);
  KILN_INTERNAL_CHECK(!(e.residual && from <= kStepResidual && !residual), "apply_epilogue_plain: no residual");
  bool alpha = from <= kStepAlpha && e.alpha != 1.f;
  bool bias = from <= kStepBias && !e.bias.empty();
  Activation act = from <= kStepAct ? e.act : Activation::none;
  bool res = from <= kStepResidual && e.residual;
  Activation after = from <= kStepActAfter ? e.act_after : Activation::none;
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 15))
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i];
    if (alpha) v = e.alpha * v;
    if (bias) {
      const int64_t channel = block == 1 ? (i / inner) % channels : ((i / (inner * block)) * block + i % block) % channels;
      v = v + e.bias[static_cast<size_t>(channel)];
    }
    v = activate(act, v);
    if (res) v = v + residual[i];
    y[i] = activate(after, v);
  }
}

bool any_nonfinite(const float* x, int64_t n) { return max_exponent_field(x, n) == 255; }

uint32_t max_exponent_field(const float* x, int64_t n) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  int64_t chunks = (n + kChunk - 1) / kChunk;
  uint32_t m = 0;
#pragma omp parallel for reduction(max : m) schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * kChunk;
    uint32_t e = max_exponent_bits(x + begin, std::min(kChunk, n - begin));
    m = e > m ? e : m;
  }
  return m >> 23;
}

namespace detail {

PostOpPlan plan_post_ops(const Epilogue& e, int steps, const dnnl::memory::desc& dst_md, int channel_axis,
                         bool residual_as_sum) {
  PostOpPlan plan;
  plan.attr = user_scratchpad_attr();
  dnnl::post_ops po;
  int index = 0;  // position in the post-op chain (binary post-ops are bound by it)
  dnnl::memory::dims dst_dims = dst_md.dims();
  if (steps > kStepAlpha && e.alpha != 1.f) {
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, e.alpha, 0.f);
    ++index;
  }
  if (steps > kStepBias && !e.bias.empty()) {
    dnnl::memory::dims bias_dims(dst_dims.size(), 1);
    bias_dims[static_cast<size_t>(channel_axis)] = static_cast<int64_t>(e.bias.size());
    plan.bias_md = dnnl::memory::desc(bias_dims, dnnl::memory::data_type::f32, row_major_strides(bias_dims));
    if (index == 0) {
      // Nothing before it: the primitive's own bias (added to the accumulator, same as a binary add).
      plan.native_bias = true;
    } else {
      po.append_binary(dnnl::algorithm::binary_add, plan.bias_md);
      plan.bias_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1;
      ++index;
    }
  }
  if (steps > kStepAct && e.act != Activation::none) {
    po.append_eltwise(1.f, eltwise_algorithm(e.act), eltwise_alpha(e.act), 0.f);
    ++index;
  }
  if (steps > kStepResidual && e.residual) {
    if (residual_as_sum) {
      po.append_sum(1.f);
    } else {
      po.append_binary(dnnl::algorithm::binary_add, dst_md);
      plan.residual_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1;
    }
    ++index;
  }
  if (steps > kStepActAfter && e.act_after != Activation::none) {
    po.append_eltwise(1.f, eltwise_algorithm(e.act_after), eltwise_alpha(e.act_after), 0.f);
    ++index;
  }
  plan.attr.set_post_ops(po);
  return plan;
}

namespace {
std::atomic<uint64_t> weight_layouts_prepared{0};

// A blocked memory descriptor as text, every field that places an element ("" for other formats,
// which are never saved): the name of a pack's layout (support/packed_weights.h).
std::string layout_name(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked) return {};
  const int n = d.ndims;
  auto dims = [n](const dnnl_dims_t& v, int count = -1) {
    return fmt::format("{}", fmt::join(v, v + (count < 0 ? n : count), ","));
  };
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  return fmt::format("onednn dt={} dims={} padded={} offsets={} offset0={} strides={} blocks={}:{}:{} extra={},{},{},{}",
                     int(d.data_type), dims(d.dims), dims(d.padded_dims), dims(d.padded_offsets), d.offset0,
                     dims(b.strides), b.inner_nblks, dims(b.inner_blks, b.inner_nblks), dims(b.inner_idxs, b.inner_nblks),
                     d.extra.flags, d.extra.compensation_mask, d.extra.scale_adjust, d.extra.asymm_compensation_mask);
}
}  // namespace

std::shared_ptr<const dnnl::memory> PrepackedWeights::get(const dnnl::memory::desc& md) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Packed& p : packed_)
    if (p.md == md) return p.mem;
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory user(user_md_, eng, const_cast<float*>(data_));
  std::shared_ptr<const dnnl::memory> packed;
  std::shared_ptr<const void> saved_owner;
  const std::string layout = layout_name(md);
  std::optional<PackedCopy> saved;
  if (md != user_md_ && !layout.empty()) saved = adopt_offered_pack(data_, layout, md.get_size());
  if (md == user_md_) {
    packed = std::make_shared<const dnnl::memory>(user);  // already the wanted layout: no copy
  } else if (saved) {  // a saved model's pack, mapped from its file
    packed = std::make_shared<const dnnl::memory>(md, eng, const_cast<void*>(saved->data));
    saved_owner = saved->owner;
    populate(saved->data, saved->bytes);
    page_out(data_, user_md_.get_size());
  } else {
    auto mem = std::make_shared<dnnl::memory>(md, eng);  // library-owned buffer
    dnnl::stream& s = thread_stream();
    dnnl::reorder(user, *mem).execute(s, user, *mem);
    s.wait();
    packed = mem;
    if (!layout.empty()) record_pack(data_, layout, {mem->get_data_handle(), md.get_size(), packed});
    // The packed copy is what every call reads from now on: the original's pages (an mmapped weight
    // file's, mostly) go back, so that the weights are resident once (a later layout reads them again).
    page_out(data_, user_md_.get_size());
  }
  packed_.push_back(Packed{md, packed, std::move(saved_owner)});
  weight_layouts_prepared.fetch_add(1, std::memory_order_relaxed);
  return packed;
}

}  // namespace detail

uint64_t prepared_weight_layouts() { return detail::weight_layouts_prepared.load(std::memory_order_relaxed); }
}  // namespace kiln::onednn
