// LayerNorm folded into its MatMul on the CUDA backend (cuda_norm_fold.h).
#include "backend/cuda/cuda_norm_fold.h"

#include <algorithm>
#include <cmath>

#include "backend/cuda/cuda_kernels.h"
#include "schedule/fuse_library.h"
#include "schedule/fuse_rows.h"
#include "support/error.h"

namespace kiln::backend::cuda {

using schedule::LibraryActivation;
using schedule::LibraryGroup;

bool cuda_folds_layer_norm(const Graph& g, const LibraryGroup& group, const Options& options, bool sm90a) {
  if (!options.cuda_fold_layer_norm || options.cuda_gemm_templates == "off" || !sm90a) return false;
  if (group.norm < 0 || group.core != schedule::LibraryCore::matmul || group.core_node < 0) return false;
  const DType dtype = g.value(group.output).type.dtype;
  if (dtype != DType::bf16 && dtype != DType::f16) return false;
  const Value& w = g.value(g.nodes[size_t(group.core_node)].inputs.at(1));
  if (!w.constant || w.constant->rank() != 2 || w.constant->dtype() != dtype) return false;
  const int64_t k = w.constant->dim(0), n = w.constant->dim(1);
  if (k < 8 || k % 8 != 0 || n < 8 || n % 8 != 0) return false;  // the TMA's rows; no padded weight
  if (group.scale != 1.f || group.act_after != LibraryActivation::none || !group.tail.empty()) return false;
  return group.act == LibraryActivation::none || group.act == LibraryActivation::gelu_erf ||
         group.act == LibraryActivation::relu;
}

std::optional<RowNormFold> fold_layer_norm(const Graph& g, const Node& core, const LibraryGroup& group,
                                           std::vector<float>& bias) {
  const Tensor& w = *g.value(core.inputs.at(1)).constant;  // [K, N]
  const Tensor& gamma = *g.value(group.inputs.at(size_t(group.norm_scale))).constant;
  const Tensor* beta = group.norm_bias >= 0 ? g.value(group.inputs.at(size_t(group.norm_bias))).constant.get() : nullptr;
  const int64_t k = w.dim(0), n = w.dim(1);
  KILN_INTERNAL_CHECK(gamma.numel() == k && (!beta || beta->numel() == k), "LayerNorm fold: vectors of {} for K {}",
                      gamma.numel(), k);
  RowNormFold f;
  f.eps = static_cast<float>(g.nodes[size_t(group.norm)].attr_float("epsilon", 1e-5));
  for (int64_t i = 0; i < k; ++i) {
    f.gamma.push_back(static_cast<float>(gamma.as_double(i)));
    f.beta.push_back(beta ? static_cast<float>(beta->as_double(i)) : 0.f);
  }
  // W' = diag(gamma) W as [N, K] in W's dtype (each element one rounding of an exact f32 product); the
  // column sums of W' as the product multiplies it; beta W in f64.
  Tensor scaled = Tensor::empty(w.dtype(), {n, k});
  auto* out = scaled.data<uint16_t>();
  const bool bf16 = w.dtype() == DType::bf16;
  f.colsum.assign(size_t(n), 0.f);
  if (bias.empty()) bias.assign(size_t(n), 0.f);
  for (int64_t c = 0; c < n; ++c) {
    double sum = 0, shift = 0;
    for (int64_t r = 0; r < k; ++r) {
      const float x = static_cast<float>(w.as_double(r * n + c));
      const uint16_t word = bf16 ? float_to_bf16(f.gamma[size_t(r)] * x) : float_to_half(f.gamma[size_t(r)] * x);
      out[c * k + r] = word;
      sum += bf16 ? bf16_to_float(word) : half_to_float(word);
      shift += double(f.beta[size_t(r)]) * double(x);
    }
    f.colsum[size_t(c)] = static_cast<float>(sum);
    bias[size_t(c)] = static_cast<float>(double(bias[size_t(c)]) + shift);
  }
  f.weight_nk = std::move(scaled);
  // A weight past fp16's range is infinite, and so is its column's sum.
  for (int64_t c = 0; c < n; ++c)
    if (!std::isfinite(f.colsum[size_t(c)]) || !std::isfinite(bias[size_t(c)])) return std::nullopt;
  return f;
}

NormRowKernel make_norm_row_kernel(const CudaRuntime& runtime, const Graph& g, const LibraryGroup& group,
                                   const Options& options, ModuleCache& modules) {
  std::vector<char> claimed(g.nodes.size(), 1);
  claimed[size_t(group.norm)] = 0;
  std::vector<schedule::RowGroup> rows = schedule::find_row_groups(g, claimed);
  const std::string what = g.describe(g.nodes[size_t(group.norm)]);
  KILN_INTERNAL_CHECK(rows.size() == 1 && rows[0].nodes == std::vector<NodeId>{group.norm},
                      "{}: no row kernel of its own for a folded LayerNorm", what);
  schedule::RowGroup& r = rows[0];
  const GeneratedGroup generated{r.nodes, r.inputs, r.output, r.symbols, std::move(r.kernel), r.split_min_cols};
  NormRowKernel out;
  for (ValueId v : generated.inputs) {
    const auto it = std::find(group.inputs.begin(), group.inputs.end(), v);
    KILN_INTERNAL_CHECK(it != group.inputs.end(), "{}: the row kernel reads a value the group does not", what);
    out.slots.push_back(static_cast<int>(it - group.inputs.begin()));
  }
  const GeneratedSource source = emit_generated_cuda(generated, options);
  out.kernel = make_generated_kernel(runtime, g, generated, source, modules.get(source.name, source.code));
  return out;
}

}  // namespace kiln::backend::cuda
