#include "kiln/builder.h"

#include <cmath>
#include <fmt/format.h>

#include "ir/verifier.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln {
namespace {

// splitmix64: tiny, good enough for weights, identical everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

template <class Sample>
Tensor fill(DType dtype, std::vector<int64_t> shape, Sample&& sample) {
  int64_t n = checked_numel(shape, "random tensor");
  std::vector<double> vals(static_cast<size_t>(n));
  for (double& v : vals) v = sample();
  return Tensor::from_vector<double>(dtype, std::move(shape), vals);
}

}  // namespace

Tensor random_uniform(DType dtype, std::vector<int64_t> shape, double lo, double hi, uint64_t seed) {
  SplitMix64 rng{seed};
  return fill(dtype, std::move(shape), [&] { return lo + (hi - lo) * rng.uniform01(); });
}

Tensor random_normal(DType dtype, std::vector<int64_t> shape, double mean, double stddev, uint64_t seed) {
  SplitMix64 rng{seed};
  return fill(dtype, std::move(shape), [&] {
    double u1 = 1.0 - rng.uniform01(), u2 = rng.uniform01();  // u1 in (0, 1]: log is finite
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  });
}

GraphBuilder::GraphBuilder(std::string graph_name) { graph_.name = std::move(graph_name); }

void GraphBuilder::check_usable() const {
  if (built_) internal_error("GraphBuilder '{}': used after build()", graph_.name);
}

void GraphBuilder::check_value(ValueId v, const char* what) const {
  if (v < 0 || static_cast<size_t>(v) >= graph_.values.size())
    internal_error("GraphBuilder '{}': {} is value id {}, which does not exist", graph_.name, what, v);
}

std::string GraphBuilder::claim_name(std::string wanted, const std::string& fallback) {
  if (!wanted.empty()) {
    if (names_.count(wanted)) internal_error("GraphBuilder '{}': value name '{}' is used twice", graph_.name, wanted);
  } else {
    wanted = fallback;
    for (int k = 1; names_.count(wanted); ++k) wanted = fmt::format("{}.{}", fallback, k);
  }
  names_.insert(wanted);
  return wanted;
}

ValueId GraphBuilder::input(std::string name, DType dtype, Shape shape) {
  check_usable();
  ValueId v = graph_.add_value(claim_name(std::move(name), "input"), TensorType{dtype, std::move(shape)});
  graph_.inputs.push_back(v);
  return v;
}

ValueId GraphBuilder::input(std::string name, DType dtype, std::initializer_list<int64_t> dims) {
  return input(std::move(name), dtype, shape_of(std::vector<int64_t>(dims)));
}

ValueId GraphBuilder::input(std::string name, DType dtype, const std::vector<int64_t>& dims) {
  return input(std::move(name), dtype, shape_of(dims));
}

ValueId GraphBuilder::constant(std::string name, Tensor t) {
  check_usable();
  if (t.numel() > 0 && t.raw() == nullptr) internal_error("GraphBuilder '{}': constant without data", graph_.name);
  return graph_.add_constant(claim_name(std::move(name), fmt::format("const_{}", next_const_++)), std::move(t));
}

ValueId GraphBuilder::ints(std::vector<int64_t> values, std::string name) {
  auto n = static_cast<int64_t>(values.size());
  return constant(std::move(name), Tensor::from_vector<int64_t>(DType::i64, {n}, values));
}

ValueId GraphBuilder::scalar(DType dtype, double value, std::string name) {
  return constant(std::move(name), Tensor::from_vector<double>(dtype, {}, {value}));
}

std::string GraphBuilder::node_name_or_default(OpKind op, std::string node_name) const {
  return node_name.empty() ? fmt::format("{}_{}", op_name(op), graph_.nodes.size()) : node_name;
}

std::vector<ValueId> GraphBuilder::add(OpKind op, std::vector<ValueId> inputs, std::vector<std::string> names,
                                       Attrs attrs, std::string node_name) {
  graph_.add_node(op, std::move(inputs), std::move(names), std::move(node_name));
  Node& n = graph_.nodes.back();
  for (NamedAttr& a : attrs) {
    if (!n.attrs.emplace(a.name, std::move(a.value)).second)
      internal_error("GraphBuilder '{}': {} has attribute '{}' twice", graph_.name, graph_.describe(n), a.name);
  }
  return n.outputs;
}

void GraphBuilder::check_inputs(const std::vector<ValueId>& inputs) const {
  check_usable();
  for (ValueId v : inputs)
    if (v != kNoValue) check_value(v, "an input");
}

ValueId GraphBuilder::op(OpKind op, std::vector<ValueId> inputs, Attrs attrs, std::string node_name) {
  check_inputs(inputs);
  std::string node = node_name_or_default(op, std::move(node_name));
  std::string out = claim_name({}, node);
  return add(op, std::move(inputs), {std::move(out)}, std::move(attrs), std::move(node))[0];
}

std::vector<ValueId> GraphBuilder::op_multi(OpKind op, std::vector<ValueId> inputs, int num_outputs, Attrs attrs,
                                            std::string node_name) {
  check_inputs(inputs);
  if (num_outputs < 1) internal_error("GraphBuilder '{}': op_multi needs at least one output", graph_.name);
  std::string node = node_name_or_default(op, std::move(node_name));
  std::vector<std::string> names;
  for (int i = 0; i < num_outputs; ++i) names.push_back(claim_name({}, fmt::format("{}.{}", node, i)));
  return add(op, std::move(inputs), std::move(names), std::move(attrs), std::move(node));
}

std::vector<ValueId> GraphBuilder::op_named(OpKind op, std::vector<ValueId> inputs,
                                            std::vector<std::string> output_names, Attrs attrs, std::string node_name) {
  check_inputs(inputs);
  for (std::string& s : output_names)
    if (!s.empty()) s = claim_name(std::move(s), {});
  return add(op, std::move(inputs), std::move(output_names), std::move(attrs),
             node_name_or_default(op, std::move(node_name)));
}

void GraphBuilder::rename(ValueId v, std::string name) {
  check_usable();
  check_value(v, "the value to rename");
  Value& val = graph_.value(v);
  if (val.name == name) return;
  if (name.empty()) internal_error("GraphBuilder '{}': empty name for value '{}'", graph_.name, val.name);
  std::string claimed = claim_name(std::move(name), {});
  names_.erase(val.name);
  val.name = std::move(claimed);
}

void GraphBuilder::output(ValueId v, std::string name) {
  check_usable();
  check_value(v, "a graph output");
  if (!name.empty()) rename(v, std::move(name));
  graph_.outputs.push_back(v);
}

void GraphBuilder::set_type(ValueId v, TensorType type) {
  check_usable();
  check_value(v, "the value to type");
  graph_.value(v).type = std::move(type);
}

const Value& GraphBuilder::value(ValueId v) const {
  check_value(v, "the value asked for");
  return graph_.value(v);
}

Graph GraphBuilder::build() {
  check_usable();
  verify_graph(graph_, "GraphBuilder");
  built_ = true;
  return std::move(graph_);
}

}  // namespace kiln
