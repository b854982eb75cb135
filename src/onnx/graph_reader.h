// Internal to the importer: the state shared by graph building, attribute conversion and the rewrites
// that bring older opsets to their opset-18 form.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "kiln/options.h"

namespace onnx {
class NodeProto;
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

  // A new constant 1-D i64 tensor.
  ValueId constant_i64(const std::string& base, const std::vector<int64_t>& values);
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

// Converts a node's attributes; `desc` names the node in messages ("node 'n' (Op)").
AttrMap convert_attributes(const ::onnx::NodeProto& node, const std::string& desc, const Options& options,
                           ExternalData* external);

// Adds one node in its opset-18 form (older forms rewritten: axes/split attributes become inputs,
// Softmax/LogSoftmax before 13 get single-axis semantics).
void add_canonical_node(OnnxGraphReader& b, OpKind op, std::string name, std::vector<ValueId> inputs,
                        const std::vector<std::string>& outputs, AttrMap attrs);

}  // namespace kiln
