// The executor's parts (executor.cpp), shared with the captured path (captured_run.cpp): a run's values,
// its inputs bound and checked, its steps launched, its outputs handed back.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/executable.h"
#include "kiln/session.h"
#include "runtime/executor.h"

namespace kiln::runtime {

struct RunState {
  std::vector<Tensor> slots;   // per value, while it lives
  std::vector<char> present;   // per value: made (or given) yet
  bool inputs_on_device = false;  // every input was given on the run's device: the outputs stay there too
};

// The given inputs checked against the graph's (dtype, rank, static and symbolic dims) and placed on
// the backend's device.
RunState bind_inputs(const compiler::Executable& exe, const std::map<std::string, Tensor>& inputs);
// Every step's kernel in order, into the arena `arena_memory`; what no later step reads is let go.
void launch_steps(const compiler::Executable& exe, const std::shared_ptr<void>& arena_memory, RunState& r,
                  const Options& options, RunProfile* profile);
// The graph outputs by name from `outputs` (in graph output order), on the host, or on the device when
// every input was given there; never an alias of a constant, an input or a buffer a later run reuses
// (`reused`: the outputs are a captured graph's fixed buffers, always copied).
std::map<std::string, Tensor> collect_outputs(const compiler::Executable& exe, const std::vector<Tensor>& outputs,
                                              bool inputs_on_device, bool reused = false);

// Whether this run replays a captured graph: a runtime that captures, the cuda_graphs setting, static
// input shapes, no per-step timing.
bool capturable(const compiler::Executable& exe, const Options& options, const RunProfile* profile);
std::map<std::string, Tensor> execute_captured(const compiler::Executable& exe, ArenaPool& arenas, RunState& r,
                                               const Options& options);

}  // namespace kiln::runtime
