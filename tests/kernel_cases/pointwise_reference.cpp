#include "pointwise_reference.h"

#include <map>

#include "ops/elementwise/elementwise.h"
#include "ops/shape/shape_ops.h"
#include "support/error.h"

namespace kiln::backend::cuda::testing {
namespace {

constexpr int64_t kMaxRank = 16;

Tensor widened(const Tensor& t) {
  return is_float(t.dtype()) && t.dtype() != DType::f64 ? elementwise::convert_elements(t, DType::f64, false) : t;
}

const OpDef& definition(const Node& n) {
  const OpDef* def = pointwise_reference_ops().find(n.op);
  KILN_INTERNAL_CHECK(def, "pointwise reference: no kernel for {} (node '{}')", op_name(n.op), n.name);
  return *def;
}

// run_node's work for one output, without the half-precision widening (no half types here).
Tensor run_reference_node(const Node& n, const std::vector<const Tensor*>& in) {
  const OpDef& def = definition(n);
  std::vector<TensorType> types(in.size());
  std::vector<const TensorType*> type_of(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    types[i] = TensorType{in[i]->dtype(), shape_of(in[i]->shape())};
    type_of[i] = &types[i];
  }
  int fresh = 0;
  InferContext ctx(n, type_of, in, &fresh, kMaxRank);
  std::vector<TensorType> out_types = def.infer(ctx);
  std::vector<Tensor> out(1);
  if (!def.kernel_makes_outputs) out[0] = Tensor::empty(out_types.at(0).dtype, static_dims(out_types[0].shape));
  KernelContext reference;
  reference.reference = true;
  def.kernel(n, in, out, reference);
  return out[0];
}

}  // namespace

const OpRegistry& pointwise_reference_ops() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    shape_ops::register_transpose_op(r);
    return r;
  }();
  return registry;
}

void infer_types(Graph& g) {
  int fresh = 0;
  for (Node& n : g.nodes) {
    std::vector<const TensorType*> types;
    std::vector<const Tensor*> values;
    for (ValueId v : n.inputs) {
      types.push_back(v == kNoValue ? nullptr : &g.value(v).type);
      values.push_back(v == kNoValue ? nullptr : g.value(v).constant.get());
    }
    InferContext ctx(n, std::move(types), std::move(values), &fresh, kMaxRank);
    std::vector<TensorType> out = definition(n).infer(ctx);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) g.value(n.outputs[i]).type = out.at(i);
  }
}

Tensor reference_group(const Graph& g, const schedule::PointwiseGroup& group, const std::vector<Tensor>& inputs) {
  KILN_INTERNAL_CHECK(inputs.size() == group.inputs.size(), "pointwise reference: {} inputs for {}", inputs.size(),
                      group.inputs.size());
  std::map<ValueId, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[group.inputs[i]] = widened(inputs[i]);
  for (NodeId id : group.nodes) {
    const Node& n = g.nodes[size_t(id)];
    for (ValueId v : n.inputs)  // constants the kernel inlined (scalars) are no group input
      if (!values.count(v)) {
        KILN_INTERNAL_CHECK(g.value(v).constant, "pointwise reference: value '{}' has no tensor", g.value(v).name);
        values[v] = widened(*g.value(v).constant);
      }
    std::vector<const Tensor*> in;
    for (ValueId v : n.inputs) in.push_back(&values.at(v));
    values[n.outputs[0]] = widened(run_reference_node(n, in));  // a Cast to f32 rounds, then widens exactly
  }
  return values.at(group.output);
}

}  // namespace kiln::backend::cuda::testing
