// What a compile produces: the compiled graph (its fusion groups recorded in the IR), the steps a run
// takes, the kernel of each step (built by the backend) and the memory plan. An executor
// (runtime/executor.h) runs it; it does not change after the compile.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "compiler/plan.h"
#include "kiln/graph.h"

namespace kiln::compiler {

struct Executable {
  Graph graph;
  bool widened = false;  // floats run in f64 (the reference mode): float inputs are widened on the way in
  std::vector<Step> steps;
  std::vector<std::unique_ptr<backend::Kernel>> kernels;  // Step::kernel indexes these
  std::vector<int> last_use;  // per value: the last step that reads it (graph outputs: never freed)
  // Per value: a constant a step reads, as the backend placed it (BackendCompile::place_constant).
  std::vector<std::shared_ptr<const Tensor>> constants;
  MemoryPlan memory;
  PlanStats plan;
  backend::TuningStats tuning;
  const backend::DeviceRuntime* runtime = nullptr;  // the backend's (it outlives the executable)
};

}  // namespace kiln::compiler
