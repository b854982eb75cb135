// Generated kernels: reductions with their pointwise neighbours (schedule/fuse_rows.h), then pointwise
// chains (schedule/fuse_pointwise.h), each recorded as a group; the backend compiles them all at once.
#include <cctype>

#include "compiler/compile_state.h"
#include "schedule/fuse_pointwise.h"
#include "schedule/fuse_rows.h"
#include "support/error.h"

namespace kiln::compiler {
namespace {

// "add+softmax+where": the group's ops, for IR dumps.
std::string ops_label(const Graph& g, const std::vector<NodeId>& nodes) {
  std::string label;
  for (NodeId n : nodes) {
    std::string op(op_name(g.nodes[size_t(n)].op));
    for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    label += (label.empty() ? "" : "+") + op;
  }
  return label;
}

void add_generated(CompileState& s, const char* kind, backend::GeneratedGroup group) {
  s.generated_group.push_back(s.graph.add_group(kind, ops_label(s.graph, group.nodes), group.nodes));
  s.generated.push_back(std::move(group));
}

}  // namespace

void fuse_row_kernels(CompileState& s) {
  for (schedule::RowGroup& g : schedule::find_row_groups(s.graph, s.claimed(), s.target))
    add_generated(s, "row", {g.nodes, g.inputs, g.output, g.symbols, std::move(g.kernel), g.split_min_cols});
}

void fuse_pointwise_kernels(CompileState& s) {
  const size_t min_nodes = s.backend.fusions(s.options).pointwise_singletons ? 1 : 2;
  for (schedule::PointwiseGroup& g : schedule::find_pointwise_groups(s.graph, s.claimed(), min_nodes))
    add_generated(s, "pointwise", {g.nodes, g.inputs, g.output, g.symbols, std::move(g.kernel)});
}

void compile_generated_kernels(CompileState& s) {
  std::vector<std::unique_ptr<backend::Kernel>> kernels = s.job->generated_kernels(s.graph, s.generated);
  KILN_INTERNAL_CHECK(kernels.size() == s.generated.size(), "backend {}: {} kernels for {} generated groups",
                      s.backend.name(), kernels.size(), s.generated.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    const backend::GeneratedGroup& group = s.generated[k];
    std::string label = s.graph.groups[size_t(s.generated_group[k])].kind + " " + kernels[k]->name();
    s.add_fused_step(StepKind::generated, group.nodes, group.inputs, {group.output}, std::move(kernels[k]),
                     std::move(label));
  }
}

}  // namespace kiln::compiler
