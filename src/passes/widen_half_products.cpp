// The products of an f16 / bf16 graph on a backend whose library calls compute in f32 (the CPU's
// oneDNN, OpenBLAS and GEMM templates): each MatMul, Gemm, Conv and ConvTranspose with half data reads
// f32 operands and writes an f32 result that a Cast rounds back to the half type. A constant operand
// (a weight) is converted once, here; any other goes through a Cast (one per value, however many
// products read it). The product then takes the library route instead of a node kernel that converts
// at every run, and the Casts fuse with the generated kernels beside it. The result is the f32 product
// rounded once, as the node kernel computes it.
#include <map>

#include "kiln/graph.h"
#include "kiln/tensor.h"
#include "passes/cast_node.h"
#include "passes/passes.h"

namespace kiln {
namespace {

bool is_product(OpKind op) {
  return op == OpKind::MatMul || op == OpKind::Gemm || op == OpKind::Conv || op == OpKind::ConvTranspose;
}

// A half constant as f32 (exact: every half value is a float).
Tensor widen_tensor(const Tensor& t) {
  Tensor out = Tensor::empty(DType::f32, t.shape());
  const uint16_t* src = t.data<uint16_t>();
  float* dst = out.data<float>();
  const bool bf16 = t.dtype() == DType::bf16;
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = bf16 ? bf16_to_float(src[i]) : half_to_float(src[i]);
  return out;
}

}  // namespace

int widen_half_products(Graph& g, const Options& options) {
  std::map<ValueId, ValueId> widened;  // a half value -> its f32 copy (a constant, or a Cast's output)
  std::vector<Node> nodes;
  int rewritten = 0;
  for (Node& n : g.nodes) {
    const bool half = is_product(n.op) && n.outputs.size() == 1 && n.outputs[0] != kNoValue &&
                      is_half(g.value(n.outputs[0]).type.dtype);
    if (!half) {
      nodes.push_back(std::move(n));
      continue;
    }
    ++rewritten;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.has_input(i) || !is_half(g.value(n.inputs[i]).type.dtype)) continue;
      const ValueId v = n.inputs[i];
      auto it = widened.find(v);
      if (it == widened.end()) {
        const Value& value = g.value(v);
        const std::string name = value.name + "_f32";
        ValueId w;
        if (value.constant) {
          w = g.add_constant(name, widen_tensor(*value.constant));
        } else {
          w = g.add_value(name, TensorType{DType::f32, value.type.shape});
          nodes.push_back(cast_node(v, w, DType::f32, name));
        }
        it = widened.emplace(v, w).first;
      }
      n.inputs[i] = it->second;
    }
    const ValueId out = n.outputs[0];
    const DType half_type = g.value(out).type.dtype;
    const ValueId wide = g.add_value(g.value(out).name + "_f32", TensorType{DType::f32, g.value(out).type.shape});
    n.outputs[0] = wide;
    const std::string cast_name = n.name + "_" + std::string(dtype_name(half_type));
    nodes.push_back(std::move(n));
    nodes.push_back(cast_node(wide, out, half_type, cast_name));
  }
  g.set_nodes(std::move(nodes));  // every node was moved into `nodes`
  if (rewritten > 0) infer_shapes(g, options);
  return rewritten;
}

}  // namespace kiln
