// The last pass: a step for every node no group computes (its kernel from the backend), the constants
// the steps read placed by the backend, then the memory plan. Returns the plan as text (KILN_DEBUG=fusion, --dump-dir).
#include <fmt/format.h>

#include "compiler/compile_state.h"
#include "compiler/executable.h"

namespace kiln::compiler {

std::string plan_steps(CompileState& s, Executable& exe) {
  const Graph& g = s.graph;
  std::vector<int> step_of_node;
  exe.steps = make_steps(g, std::move(s.fused), step_of_node);
  for (Step& step : exe.steps) {
    if (step.kernel >= 0) continue;
    step.kernel = static_cast<int>(s.kernels.size());
    s.kernels.push_back(s.job->node_kernel(g, g.nodes[size_t(step.node)]));
  }
  exe.kernels = std::move(s.kernels);
  exe.constants.assign(g.values.size(), nullptr);
  for (const Step& step : exe.steps)
    for (ValueId v : step.inputs)
      if (v != kNoValue && g.value(v).constant && !exe.constants[size_t(v)])
        exe.constants[size_t(v)] = s.job->place_constant(g.value(v).constant);
  exe.last_use = last_uses(g, exe.steps);
  exe.memory = plan_memory(g, exe.steps);
  exe.plan = plan_stats(g, exe.steps, exe.memory);
  const PlanStats& p = exe.plan;
  return plan_text(g, exe.steps, exe.memory) +
         fmt::format("# {} ops, {} kernels ({} generated, {} library), {} views; {} buffers in a {}-byte arena "
                     "for {} planned bytes; {} bytes moved\n",
                     g.nodes.size(), p.kernels, p.generated, p.library, p.views, p.buffers, p.arena_bytes,
                     p.planned_bytes, p.bytes_moved);
}

}  // namespace kiln::compiler
