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
    std::vector<ValueId> outputs{group.output};
    if (group.norm_output != kNoValue) outputs.push_back(group.norm_output);  // a folded LayerNorm's own output
    s.add_fused_step(StepKind::library, group.nodes, group.inputs, std::move(outputs), std::move(kernel), group.label);
  }
}

}  // namespace kiln::compiler
