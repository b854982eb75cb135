// Transpose: permutes dims (default: reversed). The copy is done by transpose_copy, which memcpys rows
// when the inner axis stays put ([B,S,H,D] -> [B,H,S,D]) and moves square tiles when it does not
// (swapping the last two dims).
#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

std::vector<int64_t> transpose_perm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm")) {
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
    return perm;
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    node_fail(node, "perm has {} entries for an input of rank {}", perm.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    // ONNX's checker refuses negative entries too; the fused kernels index by perm as given.
    if (p < 0 || p >= rank) node_fail(node, "perm entry {} is out of range [0, {})", p, rank);
    if (seen[static_cast<size_t>(p)]) node_fail(node, "perm [{}] is not a permutation", fmt::join(perm, ","));
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

std::vector<TensorType> infer_transpose(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  std::vector<int64_t> perm = transpose_perm(ctx.node(), data.rank());
  Shape out;
  for (int64_t p : perm) out.push_back(data.shape[static_cast<size_t>(p)]);
  return {TensorType{data.dtype, out}};
}

void kernel_transpose(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                      const KernelContext&) {
  const Tensor& x = *in[0];
  std::vector<int64_t> perm = transpose_perm(node, x.rank());
  transpose_copy(dtype_size(x.dtype()), x.shape(), perm, x.raw(), out[0].raw());
}

}  // namespace

void register_transpose_op(OpRegistry& r) {
  OpDef d;
  d.infer = infer_transpose;
  d.kernel = kernel_transpose;
  d.handles_half = true;
  d.min_inputs = d.max_inputs = 1;
  r.add(OpKind::Transpose, d);
}

}  // namespace kiln::shape_ops
