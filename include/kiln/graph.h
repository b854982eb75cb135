// The graph IR: values (typed, maybe constant), nodes (one op each, attributes), in topological order.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

enum class OpKind : uint16_t {
#define KILN_OP(name) name,
#include "kiln/ops.def"
#undef KILN_OP
};
inline constexpr int kNumOps = 0
#define KILN_OP(name) +1
#include "kiln/ops.def"
#undef KILN_OP
    ;
std::string_view op_name(OpKind op);
std::optional<OpKind> op_from_name(std::string_view name);

// A dimension: a known size, or a named symbol (with a size hint, -1 if none).
struct Dim {
  int64_t value = -1;   // >= 0 when static
  std::string symbol;   // non-empty when symbolic
  int64_t hint = -1;

  static Dim fixed(int64_t v) { return Dim{v, {}, -1}; }
  static Dim sym(std::string name, int64_t hint = -1) { return Dim{-1, std::move(name), hint}; }
  bool is_static() const { return symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};
using Shape = std::vector<Dim>;

std::string dim_string(const Dim& d);      // "128" or "seq"
std::string shape_string(const Shape& s);  // "[batch,128]"
bool is_static(const Shape& s);
std::vector<int64_t> static_dims(const Shape& s);  // internal error if symbolic
Shape shape_of(const std::vector<int64_t>& dims);

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
};
std::string type_string(const TensorType& t);  // "f32[batch,128,768]"

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;
  TensorType type;
  NodeId producer = -1;                     // -1: graph input or constant
  std::shared_ptr<const Tensor> constant;   // set for initializers and folded values
};

class Graph;

// A subgraph (If's then_branch / else_branch): its inputs are the values the node passes it (the
// outer-scope values it reads, captured as node inputs so that every pass sees the dependency).
// Shared and immutable: a pass that changes one makes a new Graph.
using SubgraphRef = std::shared_ptr<const Graph>;

struct Attribute {
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<std::string>, Tensor, SubgraphRef>
      value;
};

struct Node {
  OpKind op{};
  std::string name;
  std::vector<ValueId> inputs;   // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;  // kNoValue for an omitted optional output
  std::map<std::string, Attribute, std::less<>> attrs;
  int32_t group = -1;  // the fusion group (Graph::groups) that computes this node; -1: none

  bool has_attr(std::string_view n) const { return attrs.find(n) != attrs.end(); }
  // Typed attribute reads; a present attribute of the wrong kind is a user error naming the node.
  int64_t attr_int(std::string_view n, int64_t def) const;
  double attr_float(std::string_view n, double def) const;
  std::string attr_string(std::string_view n, std::string def) const;
  std::vector<int64_t> attr_ints(std::string_view n, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(std::string_view n, std::vector<double> def = {}) const;
  const Tensor* attr_tensor(std::string_view n) const;
  // The subgraph attribute `n`; a missing one or one of another kind is a user error naming the node.
  const Graph& attr_graph(std::string_view n) const;
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != kNoValue; }
};

// A set of nodes a fusion pass made into one kernel: the plan of a compile, recorded in the IR so that
// it prints and parses back like every other step. `kind` names the pass ("library", "row",
// "pointwise"), `label` what the kernel computes ("matmul+bias+gelu").
struct FusionGroup {
  std::string kind;
  std::string label;
};

class Graph {
 public:
  std::string name = "main";
  std::vector<Value> values;
  std::vector<Node> nodes;        // topological order
  std::vector<ValueId> inputs;    // runtime inputs (not constants)
  std::vector<ValueId> outputs;
  std::vector<FusionGroup> groups;  // indexed by Node::group

  ValueId add_value(std::string name, TensorType type);
  ValueId add_constant(std::string name, Tensor t);
  // Appends a node; creates its outputs with the given names (types filled by shape inference).
  NodeId add_node(OpKind op, std::vector<ValueId> inputs, std::vector<std::string> output_names,
                  std::string name = {});
  std::optional<ValueId> find_value(std::string_view name) const;
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  // "node 'name' (Op)" for error messages.
  std::string describe(const Node& n) const;
  // Number of uses of each value (node inputs plus graph outputs).
  std::vector<int> use_counts() const;
  // Replaces the node list (in topological order) and points every value's producer at its node (-1:
  // an input or constant).
  void set_nodes(std::vector<Node> new_nodes);
  // Drops nodes whose outputs nobody uses and values nobody refers to; keeps ids dense.
  void remove_dead();
  // Records a fusion group over `nodes` (none already in a group); returns its index.
  int32_t add_group(std::string kind, std::string label, const std::vector<NodeId>& nodes);
};

}  // namespace kiln
