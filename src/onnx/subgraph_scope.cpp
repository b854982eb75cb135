// The outer-scope names of ONNX subgraphs (If's branches): what a branch reads without defining it,
// which the importer turns into explicit inputs of the branch and of its node.
#include <onnx/onnx.pb.h>

#include <unordered_set>

#include "onnx/graph_reader.h"
#include "support/error.h"

namespace kiln {

std::vector<std::string> outer_names(const ::onnx::GraphProto& g, const std::string& what, int depth) {
  // Checked before recursing: a hostile chain of nested Ifs must not overflow the stack.
  if (depth > kMaxSubgraphDepth)
    user_error("{}: subgraphs nest deeper than {} levels", what, kMaxSubgraphDepth);
  std::unordered_set<std::string> defined;
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& n : g.node())
    for (const auto& out : n.output())
      if (!out.empty()) defined.insert(out);
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) names.push_back(name);
  };
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input()) read(in);
    for (const auto& a : n.attribute()) {
      std::string inner = fmt::format("{} > node '{}' ({}) attribute '{}'", what, n.name(), n.op_type(), a.name());
      if (a.has_g())
        for (const std::string& name : outer_names(a.g(), inner, depth + 1)) read(name);
      for (const auto& sub : a.graphs())
        for (const std::string& name : outer_names(sub, inner, depth + 1)) read(name);
    }
  }
  for (const auto& out : g.output()) read(out.name());
  return names;
}

}  // namespace kiln
