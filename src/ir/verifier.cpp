#include "ir/verifier.h"

#include <fmt/format.h>

#include "support/error.h"

namespace kiln {
namespace {

class Verifier {
 public:
  Verifier(const Graph& g, std::string_view pass) : g_(g), pass_(pass), producer_(g.values.size(), -1) {}

  void run() {
    check_producers();
    check_inputs();
    check_constants();
    check_nodes();
    check_outputs();
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(std::string_view where, fmt::format_string<Args...> f, Args&&... args) {
    internal_error("after pass '{}': {}: {}", pass_, where, fmt::format(f, std::forward<Args>(args)...));
  }
  std::string where(size_t node_index) const {
    const Node& n = g_.nodes[node_index];
    int op = static_cast<int>(n.op);
    std::string op_text = op < kNumOps ? std::string(op_name(n.op)) : fmt::format("bad op {}", op);
    return fmt::format("node '{}' ({}) #{}", n.name, op_text, node_index);
  }
  bool in_range(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < g_.values.size(); }
  std::string value_text(ValueId v) const { return fmt::format("value {} '{}'", v, g_.values[static_cast<size_t>(v)].name); }

  // Who produces each value, from the node lists; the producer fields must agree.
  void check_producers() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (static_cast<int>(n.op) >= kNumOps) fail(where(i), "op kind out of range");
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        ValueId v = n.outputs[k];
        if (v == kNoValue) continue;
        if (!in_range(v)) fail(where(i), "output {} is value id {}, out of range (graph has {} values)", k, v, g_.values.size());
        NodeId& p = producer_[static_cast<size_t>(v)];
        if (p >= 0) fail(where(i), "output {} ({}) is also produced by {}", k, value_text(v), where(static_cast<size_t>(p)));
        p = static_cast<NodeId>(i);
      }
    }
    for (size_t v = 0; v < g_.values.size(); ++v) {
      NodeId field = g_.values[v].producer;
      if (field == producer_[v]) continue;
      auto id = static_cast<ValueId>(v);
      if (producer_[v] >= 0)
        fail(where(static_cast<size_t>(producer_[v])), "{} has producer field {}, but this node (#{}) produces it",
             value_text(id), field, producer_[v]);
      fail("graph", "{} has producer field {}, but no node produces it", value_text(id), field);
    }
  }

  void check_inputs() {
    std::vector<char> seen(g_.values.size(), 0);
    for (size_t i = 0; i < g_.inputs.size(); ++i) {
      ValueId v = g_.inputs[i];
      if (!in_range(v)) fail("graph", "graph input {} is value id {}, out of range", i, v);
      if (seen[static_cast<size_t>(v)]) fail("graph", "graph input {} ({}) is listed twice", i, value_text(v));
      seen[static_cast<size_t>(v)] = 1;
      NodeId p = producer_[static_cast<size_t>(v)];
      if (p >= 0) fail(where(static_cast<size_t>(p)), "produces graph input {} ({})", i, value_text(v));
    }
    is_input_ = std::move(seen);
  }

  void check_constants() {
    for (size_t v = 0; v < g_.values.size(); ++v) {
      const Value& val = g_.values[v];
      if (!val.constant) continue;
      auto id = static_cast<ValueId>(v);
      NodeId p = producer_[v];
      if (p >= 0) fail(where(static_cast<size_t>(p)), "produces {}, which is also a constant", value_text(id));
      const Tensor& t = *val.constant;
      if (t.numel() > 0 && t.raw() == nullptr) fail("graph", "constant {} has no data", value_text(id));
      if (val.type == TensorType{}) continue;  // not known (yet)
      bool ok = val.type.dtype == t.dtype() && val.type.rank() == t.rank();
      for (int d = 0; ok && d < t.rank(); ++d) {
        const Dim& dim = val.type.shape[static_cast<size_t>(d)];
        ok = !dim.is_static() || dim.value < 0 || dim.value == t.shape()[static_cast<size_t>(d)];  // sym / ?: any
      }
      if (!ok)
        fail("graph", "constant {} is declared {} but holds {}{}", value_text(id), type_string(val.type),
             dtype_name(t.dtype()), t.shape_string());
    }
  }

  bool defined_before(ValueId v, size_t node_index) const {
    NodeId p = producer_[static_cast<size_t>(v)];
    if (p >= 0) return static_cast<size_t>(p) < node_index;
    return is_input_[static_cast<size_t>(v)] || g_.values[static_cast<size_t>(v)].constant != nullptr;
  }

  void check_nodes() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (n.group < -1 || n.group >= static_cast<int32_t>(g_.groups.size()))
        fail(where(i), "is in fusion group {}, but the graph has {} groups", n.group, g_.groups.size());
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        ValueId v = n.inputs[k];
        if (v == kNoValue) continue;
        if (!in_range(v)) fail(where(i), "input {} is value id {}, out of range (graph has {} values)", k, v, g_.values.size());
        if (defined_before(v, i)) continue;
        NodeId p = producer_[static_cast<size_t>(v)];
        if (p >= 0)
          fail(where(i), "input {} ({}) is produced later, by {} (nodes are not in topological order)", k,
               value_text(v), where(static_cast<size_t>(p)));
        fail(where(i), "input {} ({}) is neither a graph input, a constant nor a node output", k, value_text(v));
      }
    }
  }

  void check_outputs() {
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      ValueId v = g_.outputs[i];
      if (!in_range(v)) fail("graph", "graph output {} is value id {}, out of range", i, v);
      if (!defined_before(v, g_.nodes.size()))
        fail("graph", "graph output {} ({}) is neither a graph input, a constant nor a node output", i, value_text(v));
    }
  }

  const Graph& g_;
  std::string_view pass_;
  std::vector<NodeId> producer_;  // from the nodes' output lists
  std::vector<char> is_input_;
};

}  // namespace

void verify_graph(const Graph& g, std::string_view after_pass) { Verifier(g, after_pass).run(); }

}  // namespace kiln
