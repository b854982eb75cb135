// GraphBuilder: makes a graph in a few lines, for tests and bundled models.
//
//   GraphBuilder b("mlp");
//   ValueId x = b.input("x", DType::f32, {Dim::sym("batch", 4), Dim::fixed(16)});
//   ValueId w = b.constant("w", random_uniform(DType::f32, {16, 8}, -0.5, 0.5, /*seed=*/1));
//   ValueId y = b.op(OpKind::MatMul, {x, w});
//   ValueId z = b.op(OpKind::Softmax, {y}, {{"axis", -1}});
//   auto parts = b.op_multi(OpKind::Split, {z, b.ints({4, 4})}, 2, {{"axis", 1}});
//   b.output(parts[0], "probs");
//   Graph g = b.build();  // verified
//
// Output values are named after their node ("MatMul_0"; "Split_3.0", "Split_3.1" from op_multi)
// unless named. Names are kept unique. Misuse (an unknown value id, a duplicate name) is an internal error.
#pragma once
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "kiln/graph.h"

namespace kiln {

// One attribute, converted from the usual C++ types: {"axis", -1}, {"alpha", 0.5}, {"mode", "linear"},
// {"perm", {1, 0}}, {"scales", {1.0, 2.0}}, {"names", {"a", "b"}}, {"value", tensor}.
struct NamedAttr {
  std::string name;
  Attribute value;

  NamedAttr(std::string n, Attribute v) : name(std::move(n)), value(std::move(v)) {}
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  NamedAttr(std::string n, T v) : name(std::move(n)), value{static_cast<int64_t>(v)} {}
  template <std::floating_point T>
  NamedAttr(std::string n, T v) : name(std::move(n)), value{static_cast<double>(v)} {}
  NamedAttr(std::string n, const char* v) : name(std::move(n)), value{std::string(v)} {}
  NamedAttr(std::string n, std::string v) : name(std::move(n)), value{std::move(v)} {}
  NamedAttr(std::string n, std::initializer_list<int> v)
      : name(std::move(n)), value{std::vector<int64_t>(v.begin(), v.end())} {}
  NamedAttr(std::string n, std::initializer_list<int64_t> v) : name(std::move(n)), value{std::vector<int64_t>(v)} {}
  NamedAttr(std::string n, std::initializer_list<double> v) : name(std::move(n)), value{std::vector<double>(v)} {}
  NamedAttr(std::string n, std::initializer_list<std::string> v)
      : name(std::move(n)), value{std::vector<std::string>(v)} {}
  NamedAttr(std::string n, std::vector<int64_t> v) : name(std::move(n)), value{std::move(v)} {}
  NamedAttr(std::string n, std::vector<double> v) : name(std::move(n)), value{std::move(v)} {}
  NamedAttr(std::string n, std::vector<std::string> v) : name(std::move(n)), value{std::move(v)} {}
  NamedAttr(std::string n, Tensor v) : name(std::move(n)), value{std::move(v)} {}
};
using Attrs = std::vector<NamedAttr>;

// Deterministic pseudo-random tensors (same seed, same values on every machine), for weights.
Tensor random_uniform(DType dtype, std::vector<int64_t> shape, double lo, double hi, uint64_t seed);
Tensor random_normal(DType dtype, std::vector<int64_t> shape, double mean, double stddev, uint64_t seed);

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name = "main");

  // Graph inputs. The second form takes static dims: b.input("ids", DType::i64, {1, 8}).
  ValueId input(std::string name, DType dtype, Shape shape);
  ValueId input(std::string name, DType dtype, std::initializer_list<int64_t> dims);
  ValueId input(std::string name, DType dtype, const std::vector<int64_t>& dims);

  // Constants; an empty name picks "const_N".
  ValueId constant(std::string name, Tensor t);
  ValueId constant(Tensor t) { return constant({}, std::move(t)); }
  ValueId ints(std::vector<int64_t> values, std::string name = {});  // 1-D i64, e.g. a Reshape shape
  ValueId scalar(DType dtype, double value, std::string name = {});  // rank 0

  // A node with one output (its other outputs, if any, omitted).
  ValueId op(OpKind op, std::vector<ValueId> inputs, Attrs attrs = {}, std::string node_name = {});
  // A node with `num_outputs` outputs, all named after the node.
  std::vector<ValueId> op_multi(OpKind op, std::vector<ValueId> inputs, int num_outputs, Attrs attrs = {},
                                std::string node_name = {});
  // A node with named outputs; an empty name is an omitted output (kNoValue in the result).
  std::vector<ValueId> op_named(OpKind op, std::vector<ValueId> inputs, std::vector<std::string> output_names,
                                Attrs attrs = {}, std::string node_name = {});

  // Marks `v` as a graph output, renaming it when `name` is given.
  void output(ValueId v, std::string name = {});
  // Declares a value's type (node outputs start unknown until shape inference).
  void set_type(ValueId v, TensorType type);
  void rename(ValueId v, std::string name);

  const Graph& graph() const { return graph_; }
  const Value& value(ValueId v) const;
  // Verifies and hands over the graph; the builder must not be used afterwards.
  Graph build();

 private:
  void check_value(ValueId v, const char* what) const;
  void check_usable() const;
  std::string claim_name(std::string wanted, const std::string& fallback);  // unique; fallback gets a suffix
  void check_inputs(const std::vector<ValueId>& inputs) const;
  std::string node_name_or_default(OpKind op, std::string node_name) const;
  // Adds the node with outputs named `names` (already claimed; empty: omitted) and its attributes.
  std::vector<ValueId> add(OpKind op, std::vector<ValueId> inputs, std::vector<std::string> names, Attrs attrs,
                           std::string node_name);

  Graph graph_;
  std::set<std::string, std::less<>> names_;
  int next_const_ = 0;
  bool built_ = false;
};

}  // namespace kiln
