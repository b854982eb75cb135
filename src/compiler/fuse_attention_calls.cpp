// Attention chains (schedule/fuse_attention.h), each one kernel of the backend's, recorded as
// "attention" groups. A group the backend refuses is not recorded: its nodes stay with the later passes.
#include "compiler/compile_state.h"
#include "schedule/fuse_attention.h"

namespace kiln::compiler {

void fuse_attention_calls(CompileState& s) {
  for (const schedule::AttentionGroup& a : schedule::find_attention_groups(s.graph, s.claimed())) {
    std::unique_ptr<backend::Kernel> kernel = s.job->attention_kernel(s.graph, a);
    if (!kernel) continue;
    std::vector<ValueId> inputs{a.q, a.k, a.v};
    if (a.mask != kNoValue) inputs.push_back(a.mask);
    const std::string label = a.mask != kNoValue ? (a.guard ? "attention+mask+guard" : "attention+mask") : "attention";
    s.graph.add_group("attention", label, a.nodes);
    s.add_fused_step(StepKind::library, a.nodes, inputs, {a.output}, std::move(kernel), label);
  }
}

}  // namespace kiln::compiler
