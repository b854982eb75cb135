#include "ops/node_runner.h"
#include "passes/passes.h"

namespace kiln {
namespace {
bool is_narrow_float(DType t) { return is_f32_or_half(t); }

// Widens `g`'s values, Cast targets and constants, and its subgraphs', without inference: a subgraph is
// only ever inferred on its node's input types (control::infer_subgraph), never on its own.
void widen(Graph& g) {
  for (Value& v : g.values) {
    if (!is_narrow_float(v.type.dtype)) continue;
    v.type.dtype = DType::f64;
    if (v.constant) v.constant = std::make_shared<const Tensor>(convert_tensor(*v.constant, DType::f64));
  }
  for (Node& n : g.nodes) {
    if (n.op == OpKind::Cast) {
      auto to = dtype_from_name(n.attr_string("to", ""));
      if (to && is_narrow_float(*to)) n.attrs["to"] = Attribute{std::string(dtype_name(DType::f64))};
    }
    if (n.op == OpKind::Constant) {  // value_float(s) would make an f32 constant: make it an f64 tensor
      if (n.has_attr("value_float"))
        n.attrs = {{"value", Attribute{Tensor::scalar<double>(DType::f64, n.attr_float("value_float", 0))}}};
      else if (n.has_attr("value_floats")) {
        std::vector<double> v = n.attr_floats("value_floats");
        n.attrs = {{"value", Attribute{Tensor::from_vector<double>(DType::f64, {int64_t(v.size())}, v)}}};
      }
    }
    for (auto& [name, attr] : n.attrs) {  // Constant / ConstantOfShape values
      if (auto* t = std::get_if<Tensor>(&attr.value); t && is_narrow_float(t->dtype()))
        attr.value = convert_tensor(*t, DType::f64);
      // A subgraph (If's branches, Loop's and Scan's body) reads values of the node, widened here: it is
      // widened with them, its inputs included (they are not the node's inputs one for one: Loop's
      // iteration number, Scan's slices).
      if (auto* sub = std::get_if<SubgraphRef>(&attr.value); sub && *sub) {
        auto body = std::make_shared<Graph>(**sub);
        widen(*body);
        attr.value = SubgraphRef(std::move(body));
      }
    }
  }
}

}  // namespace

void widen_to_f64(Graph& g, const Options& options) {
  widen(g);
  infer_shapes(g, options);
}

}  // namespace kiln
