// Attention groups (schedule/fuse_attention.h) as one kernel: scores, mask, online softmax and the
// product with V, without the [B,H,Sq,Sk] scores in memory. A block takes one (batch, head) and 8
// query rows (2 per warp); key tiles of 32 go through shared memory, one key per lane for the scores,
// the output's D columns spread over the lanes. fp32 arithmetic for every dtype (halves widened on
// load, the output rounded once). CUDA cores: fp32, and head dims the tensor-core kernel does not take.
// bf16 and f16 at head dims that are multiples of 16 take the tensor-core kernel instead
// (cuda_attention_mma_source.cpp). Either replaces seven launches (three Transposes, two batched
// products, the softmax, the Transpose back) with one.
//
// Softmax semantics as kiln's row kernels: a row whose scores are all -inf, or hold NaN or +inf, is NaN
// (zeros with the group's guard); keys past Sk count as -inf.
#include "backend/cuda/cuda_attention.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <fmt/format.h>

#include "backend/cuda/cuda_hopper.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_runtime.h"
#include "ops/common.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

std::atomic<uint64_t> wgmma_launches{0};

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(const CudaRuntime& runtime, const Graph& g, const schedule::AttentionGroup& a, const Options& options,
                  ModuleCache& modules)
      : runtime_(runtime),
        a_(a),
        what_(g.describe(g.nodes[size_t(a.nodes.back())])),
        spec_(mma_spec(g, a, options)),
        tensor_cores_(attention_uses_tensor_cores(spec_)),
        function_(compiled(spec_, modules)) {
    AttentionSpec w = spec_;
    const bool takes = compile_arch(runtime.info()) == "sm_90a" && attention_uses_wgmma(w);
    if (options.cuda_attention_kernel == "mma" || (!takes && options.cuda_attention_kernel == "auto")) return;
    if (!takes)
      user_error("{}: cuda_attention_kernel={} needs an sm_90 GPU (this one is {}) and bf16 / fp16 at head dim 64 or "
                 "128 ({} at {})",
                 what_, options.cuda_attention_kernel, compile_arch(runtime.info()), dtype_name(w.dtype), w.head_dim);
    force_wgmma_ = options.cuda_attention_kernel != "auto";
    w.wgmma_overlap = options.cuda_attention_kernel != "wgmma_serial";
    w.wgmma_consumers = options.cuda_attention_consumers > 0
                            ? int(options.cuda_attention_consumers)
                            : attention_wgmma_consumers(static_dim(g, a, 0) * static_dim(g, a, 1), static_dim(g, a, 2),
                                                        runtime.info().sm_count);
    wgmma_shared_bytes_ = attention_wgmma_shared_bytes(w);
    if (wgmma_shared_bytes_ > size_t(max_shared_optin(runtime.context()))) {
      if (force_wgmma_)
        user_error("{}: the wgmma attention kernel's {} bytes of shared memory a block exceed the GPU's", what_,
                   wgmma_shared_bytes_);
      return;
    }
    const std::string name = content_name("attn", attention_wgmma_source("kiln_attention", w));
    wgmma_.emplace(modules.get(name, attention_wgmma_source(name, w)).function(name));
    allow_dynamic_shared(runtime.context(), *wgmma_, wgmma_shared_bytes_);
    wgmma_spec_ = w;
  }

  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& q = *args.inputs.at(0);
    const Tensor& k = *args.inputs.at(1);
    const Tensor& v = *args.inputs.at(2);
    const Tensor* mask = spec_.mask ? args.inputs.at(3) : nullptr;
    const View qv = view(q, a_.q_perm, a_.q_slice), kv = view(k, a_.k_perm, a_.k_slice), vv = view(v, a_.v_perm, a_.v_slice);
    const int64_t batch = qv.dims[0], heads = qv.dims[1], sq = qv.dims[2], sk = kv.dims[2];
    if (kv.dims[0] != batch || vv.dims[0] != batch || kv.dims[1] != heads || vv.dims[1] != heads ||
        vv.dims[2] != sk || qv.dims[3] != a_.head_dim || kv.dims[3] != a_.head_dim || vv.dims[3] != a_.head_dim)
      user_error("{}: attention of Q {}, K {} and V {} do not agree", what_, q.shape_string(), k.shape_string(),
                 v.shape_string());
    // The output [B,H,Sq,D] is `output`'s dims through out_perm.
    std::vector<int64_t> out_dims(4);
    const std::array<int64_t, 4> o_dims{batch, heads, sq, a_.head_dim};
    for (int i = 0; i < 4; ++i) out_dims[size_t(a_.out_perm[size_t(i)])] = o_dims[size_t(i)];
    Tensor out = output_buffer(runtime_, args, 0, spec_.dtype, out_dims, what_);
    if (out.numel() == 0) return {out};
    const std::vector<int64_t> os = contiguous_strides(out_dims);
    std::array<long long, 4> o_strides{}, m_strides{};
    for (int i = 0; i < 4; ++i) o_strides[size_t(i)] = os[size_t(a_.out_perm[size_t(i)])];
    if (mask) {
      if (mask->rank() > 4 || mask->dtype() != spec_.dtype)
        user_error("{}: mask {} {}", what_, dtype_name(mask->dtype()), mask->shape_string());
      const std::vector<int64_t> scores{batch, heads, sq, sk};
      for (int i = 0; i < mask->rank(); ++i) {
        const int64_t d = mask->dim(i);
        if (d != 1 && d != scores[size_t(4 - mask->rank() + i)])
          user_error("{}: mask {} for scores [{}, {}, {}, {}]", what_, mask->shape_string(), batch, heads, sq, sk);
      }
      const std::vector<int64_t> ms = broadcast_strides(mask->shape(), scores);
      std::copy(ms.begin(), ms.end(), m_strides.begin());
    }
    const CUdeviceptr elem = dtype_size(spec_.dtype);
    CUdeviceptr pq = device_ptr(q) + qv.offset * elem, pk = device_ptr(k) + kv.offset * elem,
                pv = device_ptr(v) + vv.offset * elem, pm = mask ? device_ptr(*mask) : 0, po = device_ptr(out);
    if (wgmma_) {
      const int qt = 64 * wgmma_spec_->wgmma_consumers, kt = attention_wgmma_keys_a_tile(*wgmma_spec_);
      const std::vector<TensorMapDim> mq = map_dims(qv, qt), mk = map_dims(kv, kt), mv = map_dims(vv, kt);
      if (qv.strides[3] == 1 && kv.strides[3] == 1 && vv.strides[3] == 1 && tensor_map_takes(pq, mq) &&
          tensor_map_takes(pk, mk) && tensor_map_takes(pv, mv)) {
        launch_wgmma(half_tensor_map(spec_.dtype, pq, mq), half_tensor_map(spec_.dtype, pk, mk),
                     half_tensor_map(spec_.dtype, pv, mv), pm, po, heads, sq, sk, batch, m_strides, o_strides);
        return {out};
      }
      if (force_wgmma_)
        user_error("{}: cuda_attention_kernel=wgmma or wgmma_serial: the TMA cannot read Q {}, K {} or V {} (a "
                   "head-dim stride other than 1, or rows not 16-byte aligned)",
                   what_, q.shape_string(), k.shape_string(), v.shape_string());
    }
    long long h = heads, n_q = sq, n_k = sk;
    std::array<long long, 4> qs = qv.strides, ks = kv.strides, vs = vv.strides;
    float scale = static_cast<float>(a_.scale);
    int vec = tensor_cores_ && vectorisable({pq, pk, pv}, {&qs, &ks, &vs});
    std::vector<void*> params{&pq, &pk, &pv, &pm, &po, &h, &n_q, &n_k};
    for (auto* s : {&qs, &ks, &vs, &m_strides, &o_strides})
      for (long long& x : *s) params.push_back(&x);
    params.push_back(&scale);
    if (tensor_cores_) params.push_back(&vec);
    LaunchConfig config;
    if (batch * heads > int64_t{0x7fffffff}) user_error("{}: {} batch x heads", what_, batch * heads);
    const int64_t rows = tensor_cores_ ? int64_t{kAttentionMmaRowsPerWarp} * spec_.mma_warps : kAttentionRowsPerBlock;
    const int64_t row_blocks = (sq + rows - 1) / rows;
    // The CUDA-core kernel loops over further rows; the tensor-core one takes one tile per block.
    if (tensor_cores_ && row_blocks > 65535) user_error("{}: {} query rows", what_, sq);
    config.grid.x = static_cast<unsigned>(batch * heads);
    config.grid.y = static_cast<unsigned>(std::min<int64_t>(row_blocks, 65535));
    config.block.x = tensor_cores_ ? 32u * static_cast<unsigned>(spec_.mma_warps) : unsigned{kAttentionThreads};
    config.waits_for_prior_grids = true;  // both kernels start with the prologue
    launch_kernel(runtime_.cuda_stream(), function_, config, params);
    return {out};
  }

 private:
  struct View {
    std::array<int64_t, 4> dims{};
    std::array<long long, 4> strides{};
    CUdeviceptr offset = 0;  // elements from the tensor's start
  };
  static AttentionSpec mma_spec(const Graph& g, const schedule::AttentionGroup& a, const Options& options) {
    AttentionSpec spec{g.value(a.q).type.dtype, a.head_dim, a.mask != kNoValue, a.guard,
                       options.cuda_attention_warps > 0 ? int(options.cuda_attention_warps)
                                                        : attention_mma_warps(static_dim(g, a, 2))};
    spec.positive_scale = a.scale > 0;
    return spec;
  }
  // The output's [B,H,Sq,D] dim i; 0 when symbolic.
  static int64_t static_dim(const Graph& g, const schedule::AttentionGroup& a, int i) {
    const Dim& d = g.value(a.output).type.shape[size_t(a.out_perm[size_t(i)])];
    return d.is_static() ? d.value : 0;
  }
  // A [B,H,S,D] view as the TMA's (D, S, H, B), boxes of 64 head-dim columns by `rows`.
  std::vector<TensorMapDim> map_dims(const View& v, int rows) const {
    const int64_t e = dtype_size(spec_.dtype);
    return {{v.dims[3], 0, 64},
            {v.dims[2], v.strides[2] * e, uint32_t(rows)},
            {v.dims[1], v.strides[1] * e, 1},
            {v.dims[0], v.strides[0] * e, 1}};
  }
  void launch_wgmma(const CUtensorMap& mq, const CUtensorMap& mk, const CUtensorMap& mv, CUdeviceptr pm,
                    CUdeviceptr po, long long heads, long long sq, long long sk, int64_t batch,
                    const std::array<long long, 4>& ms, const std::array<long long, 4>& os) const {
    const int64_t row_blocks = (sq + 64 * wgmma_spec_->wgmma_consumers - 1) / (64 * wgmma_spec_->wgmma_consumers);
    if (batch * heads > int64_t{0x7fffffff} || row_blocks > 65535)
      user_error("{}: {} batch x heads and {} query rows", what_, batch * heads, sq);
    LaunchConfig config;
    config.grid.x = static_cast<unsigned>(batch * heads);
    config.grid.y = static_cast<unsigned>(row_blocks);
    config.block.x = 128u * unsigned(wgmma_spec_->wgmma_consumers + 1);
    config.shared_bytes = static_cast<unsigned>(wgmma_shared_bytes_);
    config.waits_for_prior_grids = true;
    float scale = static_cast<float>(a_.scale);
    cuda::launch(runtime_.cuda_stream(), *wgmma_, config, mq, mk, mv, pm, po, heads, sq, sk, ms[0], ms[1], ms[2],
                 ms[3], os[0], os[1], os[2], os[3], scale);
    wgmma_launches.fetch_add(1, std::memory_order_relaxed);
  }
  // Named by its content (the text with a placeholder name), as the generated kernels are.
  static Function compiled(const AttentionSpec& spec, ModuleCache& modules) {
    auto source = attention_uses_tensor_cores(spec) ? attention_mma_source : attention_source;
    const std::string name = content_name("attn", source("kiln_attention", spec));
    return modules.get(name, source(name, spec)).function(name);
  }
  // The tensor-core kernel's 16-byte path: head-dim stride 1, the other strides and the addresses
  // multiples of 8 elements.
  static bool vectorisable(const std::array<CUdeviceptr, 3>& ptrs, const std::array<std::array<long long, 4>*, 3>& strides) {
    for (CUdeviceptr p : ptrs)
      if (p % 16 != 0) return false;
    for (const std::array<long long, 4>* s : strides)
      if ((*s)[3] != 1 || (*s)[0] % 8 != 0 || (*s)[1] % 8 != 0 || (*s)[2] % 8 != 0) return false;
    return true;
  }
  // The [B,H,S,D] view of a contiguous rank-4 tensor, or of the [B,S,heads,D] columns of a rank-3 one:
  // view dim i is that tensor's dim perm[i].
  View view(const Tensor& t, const std::array<int, 4>& perm, const schedule::ColumnSlice& slice) const {
    if (t.dtype() != spec_.dtype || t.rank() != (slice.column < 0 ? 4 : 3))
      user_error("{}: attention operand {} {}", what_, dtype_name(t.dtype()), t.shape_string());
    std::vector<int64_t> dims = t.shape(), strides = contiguous_strides(t.shape());
    View v;
    if (slice.column >= 0) {
      if (t.dim(2) < slice.column + slice.heads * a_.head_dim)
        user_error("{}: attention operand {} has no columns {} to {}", what_, t.shape_string(), slice.column,
                   slice.column + slice.heads * a_.head_dim);
      dims = {t.dim(0), t.dim(1), slice.heads, a_.head_dim};
      strides = {strides[0], strides[1], a_.head_dim, 1};
      v.offset = static_cast<CUdeviceptr>(slice.column);
    }
    for (int i = 0; i < 4; ++i) {
      v.dims[size_t(i)] = dims[size_t(perm[size_t(i)])];
      v.strides[size_t(i)] = strides[size_t(perm[size_t(i)])];
    }
    return v;
  }

  const CudaRuntime& runtime_;
  schedule::AttentionGroup a_;
  std::string what_;
  AttentionSpec spec_;
  bool tensor_cores_;
  Function function_;
  std::optional<AttentionSpec> wgmma_spec_;  // the Hopper kernel, where it may run
  std::optional<Function> wgmma_;
  size_t wgmma_shared_bytes_ = 0;
  bool force_wgmma_ = false;  // wgmma or wgmma_serial forced: operands it cannot read are a user error
};

}  // namespace

uint64_t attention_wgmma_launches() { return wgmma_launches.load(); }

bool attention_fused(const Options& options, DType dtype, int64_t head_dim) {
  if (options.cuda_attention == "on") return true;
  if (options.cuda_attention == "off") return false;
  return attention_uses_tensor_cores(AttentionSpec{dtype, head_dim, false, false});
}

std::unique_ptr<Kernel> make_attention_kernel(const CudaRuntime& runtime, const Graph& g,
                                              const schedule::AttentionGroup& group, const Options& options,
                                              ModuleCache& modules) {
  const DType t = g.value(group.q).type.dtype;
  if (t != DType::f32 && t != DType::bf16 && t != DType::f16) return nullptr;
  if (!attention_fused(options, t, group.head_dim)) return nullptr;
  return std::make_unique<AttentionKernel>(runtime, g, group, options, modules);
}

}  // namespace kiln::backend::cuda
