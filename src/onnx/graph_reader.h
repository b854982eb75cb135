// Internal to the importer: the state shared by graph building, attribute conversion, the version
// adapters that bring every operator version to the newest form kiln reads, and the rewrites of ONNX
// operators that kiln reads as others.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/graph.h"
#include "kiln/options.h"

namespace onnx {
class AttributeProto;
class GraphProto;
class NodeProto;
class ValueInfoProto;
}

namespace kiln {

class ExternalData;
using AttrMap = std::map<std::string, Attribute, std::less<>>;

class OnnxGraphReader {
 public:
  OnnxGraphReader(Graph& graph, const Options& options, int64_t opset) : graph_(graph), options_(options), opset_(opset) {}

  Graph& graph() { return graph_; }
  const Options& options() const { return options_; }
  int64_t opset() const { return opset_; }

  // Names used by the model; generated names avoid them.
  void reserve_name(const std::string& name) { taken_.insert(name); }
  // A name not used by the model nor generated before: `base`, or `base_1`, `base_2`, ...
  std::string unique_name(const std::string& base);

  // The value with this model name, if it exists yet.
  std::optional<ValueId> find(const std::string& name) const;
  void bind(const std::string& name, ValueId id) { ids_[name] = id; }
  // Marks a value's declared type as known (its rank can be trusted by rewrites).
  void mark_typed(ValueId id) { typed_.insert(id); }
  std::optional<int> known_rank(ValueId id) const;
  // The element type, where the value is a constant or has a declared type.
  std::optional<DType> known_dtype(ValueId id) const;

  // A new constant 1-D i64 tensor.
  ValueId constant_i64(const std::string& base, const std::vector<int64_t>& values);
  // A scalar of `like`'s element type holding `v`: a constant where that type is known, otherwise an
  // f32 constant through CastLike.
  ValueId scalar_like(const std::string& base, double v, ValueId like);
  // Adds a node whose outputs get model names (bound for later lookups); returns its id.
  NodeId add_node(OpKind op, std::vector<ValueId> inputs, const std::vector<std::string>& outputs,
                  std::string name, AttrMap attrs);

 private:
  Graph& graph_;
  const Options& options_;
  int64_t opset_;
  std::unordered_map<std::string, ValueId> ids_;
  std::unordered_set<std::string> taken_;
  std::unordered_set<ValueId> typed_;
};

// One ONNX node on its way into the graph, in the form of `version` of its operator; the version
// adapters rewrite it a step at a time.
struct NodeForm {
  std::string op_type;  // the ONNX name
  std::string domain;   // "" for the default domain (ai.onnx)
  int version = 0;      // of the operator (the domain's opset outside the default domain)
  std::string name;
  std::vector<ValueId> inputs;  // kNoValue: an omitted optional input
  std::vector<std::string> outputs;  // "" : an omitted optional output
  AttrMap attrs;
  // Nodes to add once the node itself is in the graph (a step that renames an output adds the node
  // that computes the original one here).
  std::vector<std::function<void(OnnxGraphReader&)>> then;

  std::string desc() const;  // "node 'n' (Op-v)"
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != kNoValue; }
  bool has_output(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
  int64_t int_attr(const char* attr, int64_t def) const;
  double float_attr(const char* attr, double def) const;
  std::string string_attr(const char* attr, const std::string& def) const;
  // Moves a list-of-integers attribute to input `index` as a constant 1-D i64 tensor.
  void attr_to_input(OnnxGraphReader& b, const char* attr, size_t index);
  // Moves a float attribute to input `index` as a scalar of input 0's element type.
  void float_attr_to_input(OnnxGraphReader& b, const char* attr, size_t index);
};

// Reads a GRAPH attribute as a kiln subgraph (the importer's, for If's branches).
using SubgraphReader = std::function<SubgraphRef(const ::onnx::AttributeProto&)>;

// Converts a node's attributes; `desc` names the node in messages ("node 'n' (Op)"). A GRAPH attribute
// is read by `subgraph`; without one (every op but If) it is refused as unsupported.
AttrMap convert_attributes(const ::onnx::NodeProto& node, const std::string& desc, const Options& options,
                           ExternalData* external, const SubgraphReader* subgraph = nullptr);

// Subgraphs nest at most this deep (If in If ...); deeper is a user error, found before any recursion
// that could exhaust the stack.
inline constexpr int kMaxSubgraphDepth = 16;
// The names subgraph `g` reads but does not define (values of enclosing graphs), those of its own
// subgraphs included, in first-use order (subgraph_scope.cpp). `what` names it in messages; `depth` is
// its nesting level (1 for a branch of a top-level node).
std::vector<std::string> outer_names(const ::onnx::GraphProto& g, const std::string& what, int depth);

// A declared type from a ValueInfoProto (subgraph_nodes.cpp, as the rest of this block). `fresh_prefix`
// names dims that have neither a value nor a parameter ("_in0" -> "_in0_1"). Returns nullopt when the
// declaration says nothing usable and `required` is false.
std::optional<TensorType> declared_type(const ::onnx::ValueInfoProto& vi, const std::string& what,
                                        const std::string& fresh_prefix, bool required, const Options& options);
// Node `n`'s graph attribute `attr` (an If's branch, a Loop's or Scan's body), or a user error.
const ::onnx::GraphProto& graph_attribute(const ::onnx::NodeProto& n, const std::string& desc, const char* attr);
// The user errors of an If node: its input, attributes, and branches whose outputs disagree with it.
void check_if_node(const ::onnx::NodeProto& n, const std::string& desc);
// The inputs a Loop or Scan body receives from its node (iteration number, cond and carried values; state
// variables and scan slices), before the outer values it reads. `typed`: the type is known, not a
// placeholder that the body's inference will replace.
struct BodyInputs {
  std::vector<TensorType> types;
  std::vector<bool> typed;
};
// After checking the node and its body against each other; `own` are the node's inputs (nullopt: omitted).
BodyInputs body_inputs(OnnxGraphReader& b, const ::onnx::NodeProto& n, int version, const std::string& desc,
                       const std::vector<std::optional<ValueId>>& own);

// The outcome of looking up a node's operator and version (op_versions.cpp, version_adapters.cpp).
struct OpSupport {
  int version = 0;           // the node's version at the model's opset
  std::optional<OpKind> op;  // the kiln op of that name, if any
  bool rewritten = false;    // an ONNX operator kiln reads as others (legacy_rewrites.cpp)
};
// Checks that `op_type` exists at `opset` and that kiln reads that version of it; otherwise an
// UnsupportedError (or a UserError for an operator the opset does not have) naming the node.
OpSupport check_op_support(const std::string& op_type, int64_t opset, const std::string& node_name);

// Brings a node to the newest version kiln reads of its operator, one version step at a time
// (version_adapters.cpp).
void adapt_to_newest(OnnxGraphReader& b, NodeForm& n);
// Adds a node of an ONNX operator kiln reads as others (Upsample, Dropout, ReduceL2, ...), in its
// newest version; false when `op_type` is not one of them (legacy_rewrites.cpp).
bool add_rewritten_node(OnnxGraphReader& b, NodeForm& n);
bool is_rewritten_op(std::string_view op_type);
// Operators of other domains that kiln reads as its own ops (import_rewrites.cpp): the oldest opset of
// `domain` that has `op_type` as kiln reads it, or 0 where kiln does not read it.
int domain_op_since(std::string_view domain, std::string_view op_type);

// Adds one node, adapted to its newest version, then to kiln's canonical form (Cast's 'to' as a dtype
// name), or rewritten into kiln ops.
void add_canonical_node(OnnxGraphReader& b, NodeForm n);

}  // namespace kiln
