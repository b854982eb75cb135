#include "compiler/compile_state.h"

namespace kiln::compiler {

std::vector<char> CompileState::claimed() const {
  std::vector<char> taken(graph.nodes.size(), 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    taken[i] = graph.nodes[i].group >= 0 || (i < unfusable.size() && unfusable[i]);
  return taken;
}

void CompileState::add_fused_step(StepKind kind, const std::vector<NodeId>& nodes, const std::vector<ValueId>& inputs,
                                  std::vector<ValueId> outputs, std::unique_ptr<backend::Kernel> kernel,
                                  std::string label) {
  Step step;
  step.kind = kind;
  step.node = nodes.back();
  step.nodes = nodes;
  step.inputs = inputs;
  step.outputs = std::move(outputs);
  step.kernel = static_cast<int>(kernels.size());
  step.label = std::move(label);
  fused.push_back(std::move(step));
  kernels.push_back(std::move(kernel));
}

}  // namespace kiln::compiler
