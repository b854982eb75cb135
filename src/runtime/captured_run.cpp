// Runs replayed from one captured graph (a CUDA graph): the first run of a session launches its steps as
// usual (so that what kernels build on first use, cuBLASLt plans and loaded modules, exists before any
// capture), the second records its launches into a graph with fixed input, output and arena buffers,
// and every run from then on copies its inputs in, replays the graph (one launch) and copies the
// outputs out. Runs of one session take turns: a capture records everything queued on the stream.
#include "runtime/run_steps.h"

#include "support/error.h"

namespace kiln::runtime {

bool capturable(const compiler::Executable& exe, const Options& options, const RunProfile* profile) {
  if (!exe.runtime->can_capture() || !options.cuda_graphs || profile || options.debug_on("ops")) return false;
  for (ValueId id : exe.graph.inputs)
    if (!is_static(exe.graph.value(id).type.shape)) return false;  // one graph per shape: not yet
  return true;
}

std::map<std::string, Tensor> execute_captured(const compiler::Executable& exe, ArenaPool& arenas, RunState& r,
                                               const Options& options) {
  const Graph& g = exe.graph;
  const backend::DeviceRuntime& device = *exe.runtime;
  CapturedRun& run = arenas.captured();
  std::lock_guard lock(run.mutex);
  if (!run.graph && run.uncaptured_runs++ == 0) {
    launch_steps(exe, run.arena ? run.arena : (run.arena = arenas.take(exe)), r, options, nullptr);
    device.synchronize();
    std::vector<Tensor> outputs;
    for (ValueId id : g.outputs) outputs.push_back(r.slots[static_cast<size_t>(id)]);
    return collect_outputs(exe, outputs, r.inputs_on_device);
  }
  if (!run.graph) {
    // The graph reads its inputs from buffers of its own (an input given on the device may go away).
    run.inputs.clear();
    for (ValueId id : g.inputs) {
      Tensor& given = r.slots[static_cast<size_t>(id)];
      if (r.inputs_on_device) {
        std::shared_ptr<void> memory = device.allocate(static_cast<int64_t>(given.nbytes()));
        void* data = memory.get();
        Tensor own = Tensor::wrap(given.dtype(), given.shape(), std::move(memory), data, device.device());
        device.copy_into(given, own);
        given = own;
      }
      run.inputs.push_back(given);
    }
    device.begin_capture();
    try {
      launch_steps(exe, run.arena, r, options, nullptr);
    } catch (...) {
      device.abort_capture();
      throw;
    }
    run.outputs.clear();
    for (ValueId id : g.outputs) run.outputs.push_back(r.slots[static_cast<size_t>(id)]);
    r.slots.clear();
    run.graph = device.end_capture();
    run.captures++;
  } else {
    for (size_t i = 0; i < g.inputs.size(); ++i) device.copy_into(r.slots[static_cast<size_t>(g.inputs[i])], run.inputs[i]);
  }
  device.replay(run.graph.get());
  device.synchronize();
  return collect_outputs(exe, run.outputs, r.inputs_on_device, /*reused=*/true);
}

}  // namespace kiln::runtime
