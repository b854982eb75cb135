#include "kiln/graph.h"

#include <array>
#include <fmt/format.h>

#include "support/error.h"

namespace kiln {
namespace {
constexpr std::array<std::string_view, kNumOps> kOpNames = {
#define KILN_OP(name) #name,
#include "kiln/ops.def"
#undef KILN_OP
};

template <class T>
const T* get_attr(const Node& n, std::string_view name, std::string_view kind) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second.value);
  if (!v) user_error("node '{}' ({}): attribute '{}' must be {}", n.name, op_name(n.op), name, kind);
  return v;
}
}  // namespace

std::string_view op_name(OpKind op) { return kOpNames.at(static_cast<size_t>(op)); }
std::optional<OpKind> op_from_name(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return static_cast<OpKind>(i);
  return std::nullopt;
}

std::string dim_string(const Dim& d) { return d.is_static() ? std::to_string(d.value) : d.symbol; }
std::string shape_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + dim_string(s[i]);
  return r + "]";
}
bool is_static(const Shape& s) {
  for (const Dim& d : s)
    if (!d.is_static()) return false;
  return true;
}
std::vector<int64_t> static_dims(const Shape& s) {
  std::vector<int64_t> r;
  for (const Dim& d : s) {
    if (!d.is_static()) internal_error("static_dims: shape {} is symbolic", shape_string(s));
    r.push_back(d.value);
  }
  return r;
}
Shape shape_of(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(Dim::fixed(d));
  return s;
}
std::string type_string(const TensorType& t) { return fmt::format("{}{}", dtype_name(t.dtype), shape_string(t.shape)); }

int64_t Node::attr_int(std::string_view n, int64_t def) const {
  const auto* v = get_attr<int64_t>(*this, n, "an integer");
  return v ? *v : def;
}
double Node::attr_float(std::string_view n, double def) const {
  const auto* v = get_attr<double>(*this, n, "a float");
  return v ? *v : def;
}
std::string Node::attr_string(std::string_view n, std::string def) const {
  const auto* v = get_attr<std::string>(*this, n, "a string");
  return v ? *v : def;
}
std::vector<int64_t> Node::attr_ints(std::string_view n, std::vector<int64_t> def) const {
  const auto* v = get_attr<std::vector<int64_t>>(*this, n, "a list of integers");
  return v ? *v : def;
}
std::vector<double> Node::attr_floats(std::string_view n, std::vector<double> def) const {
  const auto* v = get_attr<std::vector<double>>(*this, n, "a list of floats");
  return v ? *v : def;
}
const Tensor* Node::attr_tensor(std::string_view n) const { return get_attr<Tensor>(*this, n, "a tensor"); }
const Graph& Node::attr_graph(std::string_view n) const {
  const auto* v = get_attr<SubgraphRef>(*this, n, "a graph");
  if (!v || !*v) user_error("node '{}' ({}): has no graph attribute '{}'", name, op_name(op), n);
  return **v;
}

ValueId Graph::add_value(std::string vname, TensorType type) {
  values.push_back(Value{std::move(vname), std::move(type), -1, nullptr});
  return static_cast<ValueId>(values.size() - 1);
}

ValueId Graph::add_constant(std::string vname, Tensor t) {
  TensorType type{t.dtype(), shape_of(t.shape())};
  ValueId id = add_value(std::move(vname), std::move(type));
  values.back().constant = std::make_shared<const Tensor>(std::move(t));
  return id;
}

NodeId Graph::add_node(OpKind op, std::vector<ValueId> ins, std::vector<std::string> output_names,
                       std::string nname) {
  NodeId id = static_cast<NodeId>(nodes.size());
  Node n;
  n.op = op;
  n.name = nname.empty() ? fmt::format("{}_{}", op_name(op), id) : std::move(nname);
  n.inputs = std::move(ins);
  for (auto& o : output_names) {
    if (o.empty()) {
      n.outputs.push_back(kNoValue);
      continue;
    }
    ValueId v = add_value(std::move(o), TensorType{});
    values.back().producer = id;
    n.outputs.push_back(v);
  }
  nodes.push_back(std::move(n));
  return id;
}

std::optional<ValueId> Graph::find_value(std::string_view vname) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == vname) return static_cast<ValueId>(i);
  return std::nullopt;
}

std::string Graph::describe(const Node& n) const { return fmt::format("node '{}' ({})", n.name, op_name(n.op)); }

std::vector<int> Graph::use_counts() const {
  std::vector<int> uses(values.size(), 0);
  for (const Node& n : nodes)
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++uses[static_cast<size_t>(v)];
  for (ValueId v : outputs) ++uses[static_cast<size_t>(v)];
  return uses;
}

void Graph::set_nodes(std::vector<Node> new_nodes) {
  nodes = std::move(new_nodes);
  for (Value& v : values) v.producer = -1;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].outputs)
      if (v != kNoValue) values[static_cast<size_t>(v)].producer = static_cast<NodeId>(i);
}

void Graph::remove_dead() {
  // Mark live nodes backwards from the outputs.
  std::vector<char> live_value(values.size(), 0), live_node(nodes.size(), 0);
  for (ValueId v : outputs) live_value[static_cast<size_t>(v)] = 1;
  for (size_t i = nodes.size(); i-- > 0;) {
    bool live = false;
    for (ValueId o : nodes[i].outputs)
      if (o != kNoValue && live_value[static_cast<size_t>(o)]) live = true;
    if (!live) continue;
    live_node[i] = 1;
    for (ValueId v : nodes[i].inputs)
      if (v != kNoValue) live_value[static_cast<size_t>(v)] = 1;
  }
  for (ValueId v : inputs) live_value[static_cast<size_t>(v)] = 1;  // inputs stay, even if unused
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live_node[i])
      for (ValueId o : nodes[i].outputs)
        if (o != kNoValue) live_value[static_cast<size_t>(o)] = 1;

  // Renumber values and nodes densely.
  std::vector<ValueId> vmap(values.size(), kNoValue);
  std::vector<Value> new_values;
  for (size_t i = 0; i < values.size(); ++i)
    if (live_value[i]) {
      vmap[i] = static_cast<ValueId>(new_values.size());
      new_values.push_back(std::move(values[i]));
    }
  std::vector<Node> new_nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live_node[i]) continue;
    Node n = std::move(nodes[i]);
    for (ValueId& v : n.inputs)
      if (v != kNoValue) v = vmap[static_cast<size_t>(v)];
    for (ValueId& v : n.outputs)
      if (v != kNoValue) v = vmap[static_cast<size_t>(v)];
    NodeId id = static_cast<NodeId>(new_nodes.size());
    for (ValueId v : n.outputs)
      if (v != kNoValue) new_values[static_cast<size_t>(v)].producer = id;
    new_nodes.push_back(std::move(n));
  }
  for (ValueId& v : inputs) v = vmap[static_cast<size_t>(v)];
  for (ValueId& v : outputs) v = vmap[static_cast<size_t>(v)];
  values = std::move(new_values);
  nodes = std::move(new_nodes);
}

int32_t Graph::add_group(std::string kind, std::string label, const std::vector<NodeId>& members) {
  const auto index = static_cast<int32_t>(groups.size());
  for (NodeId n : members) {
    Node& node = nodes.at(static_cast<size_t>(n));
    KILN_INTERNAL_CHECK(node.group < 0, "fusion group '{}': {} is already in group {}", label, describe(node), node.group);
    node.group = index;
  }
  groups.push_back(FusionGroup{std::move(kind), std::move(label)});
  return index;
}

}  // namespace kiln
