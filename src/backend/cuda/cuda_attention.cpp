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
#include <fmt/format.h>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_runtime.h"
#include "ops/common.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(const CudaRuntime& runtime, const Graph& g, const schedule::AttentionGroup& a, int warps,
                  ModuleCache& modules)
      : runtime_(runtime),
        a_(a),
        what_(g.describe(g.nodes[size_t(a.nodes.back())])),
        spec_{g.value(a.q).type.dtype, a.head_dim, a.mask != kNoValue, a.guard,
              warps > 0 ? warps : attention_mma_warps(static_query_rows(g, a))},
        tensor_cores_(attention_uses_tensor_cores(spec_)),
        function_(compiled(spec_, modules)) {}

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
    launch_kernel(runtime_.cuda_stream(), function_, config, params);
    return {out};
  }

 private:
  struct View {
    std::array<int64_t, 4> dims{};
    std::array<long long, 4> strides{};
    CUdeviceptr offset = 0;  // elements from the tensor's start
  };
  // Sq, the query rows a (batch, head); 0 when symbolic.
  static int64_t static_query_rows(const Graph& g, const schedule::AttentionGroup& a) {
    const Dim& d = g.value(a.output).type.shape[size_t(a.out_perm[2])];
    return d.is_static() ? d.value : 0;
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
};

}  // namespace

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
  return std::make_unique<AttentionKernel>(runtime, g, group, static_cast<int>(options.cuda_attention_warps), modules);
}

}  // namespace kiln::backend::cuda
