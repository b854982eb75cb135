// Library calls with their fused post-ops (schedule/fuse_library.h), built by the backend (weights
// prepacked, GEMMs tuned) and recorded as "library" groups. A group the backend refuses is not
// recorded: its nodes stay with the later passes and their eager kernels. Where the backend keeps
// convolutions' activations blocked (Fusions::blocked_conv_layouts), the layouts are assigned first
// (schedule/blocked_layouts.h); should the backend refuse a group that reads or writes a blocked value
// (its eager nodes would take it as plain), every group that touches one is built again with plain
// layouts, so that none is left.
#include "compiler/compile_state.h"
#include "schedule/blocked_layouts.h"
#include "schedule/fuse_library.h"

namespace kiln::compiler {

void fuse_library_calls(CompileState& s) {
  std::vector<schedule::LibraryGroup> groups = schedule::find_library_groups(s.graph, s.claimed(), s.target);
  const bool blocked = s.backend.fusions(s.options).blocked_conv_layouts && schedule::assign_blocked_layouts(s.graph, groups) > 0;
  auto touches_blocked = [](const schedule::LibraryGroup& g) {
    return g.blocked_input || g.blocked_residual || g.blocked_output;
  };
  std::vector<std::unique_ptr<backend::Kernel>> kernels;
  for (const schedule::LibraryGroup& group : groups) kernels.push_back(s.job->library_kernel(s.graph, group));
  bool refused_blocked = false;
  for (size_t i = 0; i < groups.size(); ++i) refused_blocked = refused_blocked || (!kernels[i] && touches_blocked(groups[i]));
  if (blocked && refused_blocked)
    for (size_t i = 0; i < groups.size(); ++i)
      if (touches_blocked(groups[i])) {
        groups[i].blocked_input = groups[i].blocked_residual = groups[i].blocked_output = false;
        kernels[i] = s.job->library_kernel(s.graph, groups[i]);
      }
  for (size_t i = 0; i < groups.size(); ++i) {
    const schedule::LibraryGroup& group = groups[i];
    if (!kernels[i]) continue;
    const std::string label = group.label + schedule::blocked_layout_note(group);
    s.graph.add_group("library", label, group.nodes);
    std::vector<ValueId> outputs{group.output};
    if (group.norm_output != kNoValue) outputs.push_back(group.norm_output);  // a folded LayerNorm's own output
    s.add_fused_step(StepKind::library, group.nodes, group.inputs, std::move(outputs), std::move(kernels[i]), label);
  }
}

}  // namespace kiln::compiler
