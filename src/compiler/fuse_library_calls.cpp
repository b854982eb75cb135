// Library calls with their fused post-ops (schedule/fuse_library.h), built by the backend (weights
// prepacked, GEMMs tuned) and recorded as "library" groups. A group the backend refuses is not
// recorded: its nodes stay with the later passes and their eager kernels.
#include "compiler/compile_state.h"
#include "schedule/fuse_library.h"

namespace kiln::compiler {

void fuse_library_calls(CompileState& s) {
  for (const schedule::LibraryGroup& group : schedule::find_library_groups(s.graph, s.claimed(), s.target)) {
    std::unique_ptr<backend::Kernel> kernel = s.job->library_kernel(s.graph, group);
    if (!kernel) continue;
    s.graph.add_group("library", group.label, group.nodes);
    Step step;
    step.kind = StepKind::library;
    step.node = group.nodes.back();
    step.nodes = group.nodes;
    step.inputs = group.inputs;
    step.outputs = {group.output};
    step.kernel = static_cast<int>(s.kernels.size());
    step.label = group.label;
    s.fused.push_back(std::move(step));
    s.kernels.push_back(std::move(kernel));
  }
}

}  // namespace kiln::compiler
