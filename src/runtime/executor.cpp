#include "runtime/executor.h"
#include "runtime/run_steps.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ops/node_runner.h"
#include "ops/registry.h"
#include "support/error.h"

namespace kiln::runtime {
namespace {

using compiler::Executable;
using compiler::Step;

// The planned buffers of one run, in its arena's memory.
class Arena {
 public:
  Arena(const Executable& exe, std::shared_ptr<void> memory) : exe_(exe), memory_(std::move(memory)) {}
  // The planned buffer of `v` as a tensor, or an undefined tensor if `v` has none.
  Tensor buffer(const Value& v, ValueId id) const {
    int slot = exe_.memory.slot_of[size_t(id)];
    if (slot < 0) return Tensor();
    char* base = static_cast<char*>(memory_.get()) + exe_.memory.slot_offset[size_t(slot)];
    return Tensor::wrap(v.type.dtype, static_dims(v.type.shape), memory_, base, exe_.runtime->device());
  }

 private:
  const Executable& exe_;
  std::shared_ptr<void> memory_;
};

// An arena for one run, taken from the pool and given back when the run ends.
class ArenaLease {
 public:
  ArenaLease(const Executable& exe, ArenaPool& pool) : pool_(pool), memory_(pool.take(exe)) {}
  ~ArenaLease() {
    if (memory_) pool_.give_back(std::move(memory_));
  }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  const std::shared_ptr<void>& memory() const { return memory_; }

 private:
  ArenaPool& pool_;
  std::shared_ptr<void> memory_;
};

// Checks a given input against the declared type and binds symbols consistently.
void check_input(const Value& v, const Tensor& t, std::map<std::string, int64_t>& bound) {
  if (t.rank() != v.type.rank())
    user_error("input '{}': expected rank {} ({}), got shape {}", v.name, v.type.rank(), type_string(v.type),
               t.shape_string());
  for (int i = 0; i < t.rank(); ++i) {
    const Dim& d = v.type.shape[static_cast<size_t>(i)];
    int64_t got = t.shape()[static_cast<size_t>(i)];
    if (d.is_static() && d.value != got)
      user_error("input '{}': dimension {} must be {}, got {}", v.name, i, d.value, got);
    if (!d.is_static()) {
      auto [it, inserted] = bound.emplace(d.symbol, got);
      if (!inserted && it->second != got)
        user_error("input '{}': dimension '{}' is {} here but {} in another input", v.name, d.symbol, got, it->second);
    }
  }
}

StepProfile step_profile(const Graph& g, const Step& step, double ms, double start_ms) {
  StepProfile p;
  p.kind = compiler::step_kind_name(step.kind);
  p.label = step.label;
  for (NodeId n : step.nodes) {
    p.source_nodes.push_back(g.nodes[size_t(n)].name);
    p.source_ops.push_back(std::string(op_name(g.nodes[size_t(n)].op)));
  }
  for (ValueId v : step.inputs) p.input_types.push_back(v == kNoValue ? "" : type_string(g.value(v).type));
  for (ValueId v : step.outputs)
    if (v != kNoValue) p.output_type += (p.output_type.empty() ? "" : ", ") + type_string(g.value(v).type);
  p.ms = ms;
  p.start_ms = start_ms;
  return p;
}

// KILN_DEBUG=ops: time per op type for this run, slowest first.
void print_op_times(const std::vector<double>& op_ms, const std::vector<int>& op_count) {
  std::vector<int> order;
  for (int k = 0; k < kNumOps; ++k)
    if (op_count[static_cast<size_t>(k)]) order.push_back(k);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return op_ms[size_t(a)] > op_ms[size_t(b)]; });
  for (int k : order)
    std::fprintf(stderr, "[ops] %-20s %5d nodes %10.3f ms\n", std::string(op_name(static_cast<OpKind>(k))).c_str(),
                 op_count[size_t(k)], op_ms[size_t(k)]);
}

using Marks = std::vector<std::unique_ptr<backend::DeviceRuntime::Mark>>;

// Every step's time from the marks just before and after its launch (marks[2i], marks[2i + 1]), read
// once the stream has passed them all: no step waits for the one before, so on a device the launches
// queue up as they do untimed, and each time is when the stream ran the step.
void record_step_times(const Executable& exe, const Marks& marks, const Options& options, RunProfile* profile) {
  const Graph& g = exe.graph;
  const backend::DeviceRuntime& device = *exe.runtime;
  device.synchronize();
  std::vector<double> op_ms(kNumOps, 0.0);
  std::vector<int> op_count(kNumOps, 0);
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Step& step = exe.steps[i];
    const double ms = device.elapsed_ms(*marks[2 * i], *marks[2 * i + 1]);
    const auto op = static_cast<size_t>(g.nodes[size_t(step.node)].op);
    op_ms[op] += ms;
    op_count[op]++;
    if (profile) profile->steps.push_back(step_profile(g, step, ms, device.elapsed_ms(*marks[0], *marks[2 * i])));
  }
  if (profile) profile->device_clock = device.device_clock();
  if (options.debug_on("ops")) print_op_times(op_ms, op_count);
}

}  // namespace

std::shared_ptr<void> ArenaPool::take(const Executable& exe) {
  if (exe.memory.arena_bytes == 0) return nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      std::shared_ptr<void> arena = std::move(free_.back());
      free_.pop_back();
      return arena;
    }
  }
  return exe.runtime->allocate(exe.memory.arena_bytes);
}

void ArenaPool::give_back(std::shared_ptr<void> arena) {
  std::lock_guard lock(mutex_);
  free_.push_back(std::move(arena));
}

RunState bind_inputs(const Executable& exe, const std::map<std::string, Tensor>& inputs) {
  const Graph& g = exe.graph;
  RunState r;
  r.slots.resize(g.values.size());
  r.present.assign(g.values.size(), 0);
  std::map<std::string, int64_t> bound;
  const backend::DeviceRuntime& device = *exe.runtime;
  r.inputs_on_device = !inputs.empty();
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) user_error("input '{}' ({}) was not given", v.name, type_string(v.type));
    Tensor t = it->second;
    if (exe.widened && is_float(t.dtype())) t = convert_tensor(t, DType::f64);
    if (t.dtype() != v.type.dtype)
      user_error("input '{}': expected dtype {}, got {}", v.name, dtype_name(v.type.dtype), dtype_name(t.dtype()));
    check_input(v, t, bound);
    if (t.device() != device.device()) {
      if (!t.device().is_host())
        user_error("input '{}' is on {}, but this model runs on {}", v.name, device_string(t.device()),
                   device_string(device.device()));
      r.inputs_on_device = false;
      t = device.upload(t);
    }
    r.slots[static_cast<size_t>(id)] = std::move(t);
    r.present[static_cast<size_t>(id)] = 1;
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (ValueId id : g.inputs) known = known || g.value(id).name == name;
    if (!known) user_error("'{}' is not an input of this model", name);
  }
  return r;
}

void launch_steps(const Executable& exe, const std::shared_ptr<void>& arena_memory, RunState& r,
                  const Options& options, RunProfile* profile) {
  const Graph& g = exe.graph;
  const backend::DeviceRuntime& device = *exe.runtime;
  const bool timed = options.debug_on("ops") || profile;
  if (profile) {
    *profile = RunProfile{};
    profile->threads = omp_get_max_threads();
  }
  Marks marks;  // around each step's launch
  if (timed) marks.reserve(2 * exe.steps.size());
  const Arena arena(exe, arena_memory);
  std::vector<const Tensor*> ins;
  std::vector<Tensor> planned;
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Step& step = exe.steps[i];
    const Node& n = g.nodes[size_t(step.node)];
    ins.clear();
    for (ValueId v : step.inputs) {
      if (v == kNoValue) ins.push_back(nullptr);
      else if (g.value(v).constant) ins.push_back(exe.constants[size_t(v)].get());
      else {
        KILN_INTERNAL_CHECK(r.present[static_cast<size_t>(v)], "executor: {} reads '{}' before it is made",
                            g.describe(n), g.value(v).name);
        ins.push_back(&r.slots[static_cast<size_t>(v)]);
      }
    }
    planned.clear();
    for (ValueId v : step.outputs) planned.push_back(v == kNoValue ? Tensor() : arena.buffer(g.value(v), v));
    if (timed) marks.push_back(device.mark());
    std::vector<Tensor> outs = exe.kernels[size_t(step.kernel)]->launch(
        backend::LaunchArgs{ins, planned, options.max_tensor_bytes, device.stream()});
    if (timed) marks.push_back(device.mark());
    KILN_INTERNAL_CHECK(outs.size() == step.outputs.size(), "executor: step '{}' made {} outputs, expected {}",
                        step.label, outs.size(), step.outputs.size());
    for (size_t k = 0; k < step.outputs.size(); ++k)
      if (step.outputs[k] != kNoValue) {
        r.slots[static_cast<size_t>(step.outputs[k])] = std::move(outs[k]);
        r.present[static_cast<size_t>(step.outputs[k])] = 1;
      }
    for (ValueId v : step.inputs)  // drop what nobody reads any more
      if (v != kNoValue && exe.last_use[static_cast<size_t>(v)] == static_cast<int>(i))
        r.slots[static_cast<size_t>(v)] = Tensor();
  }
  if (timed) record_step_times(exe, marks, options, profile);
}

std::map<std::string, Tensor> collect_outputs(const Executable& exe, const std::vector<Tensor>& outputs,
                                              bool inputs_on_device, bool reused) {
  const Graph& g = exe.graph;
  const backend::DeviceRuntime& device = *exe.runtime;
  std::map<std::string, Tensor> result;
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Value& v = g.value(g.outputs[k]);
    // Outputs never alias the executable's constants or the caller's inputs (an output that is a graph
    // input, or a view of one): a caller may write into what it gets, or free what it gave.
    bool may_alias = v.constant || v.producer < 0 ||
                     op_registry().find(g.nodes[static_cast<size_t>(v.producer)].op)->kernel_makes_outputs;
    const Tensor& t = v.constant ? *v.constant : outputs[k];
    if (t.device().is_host()) result[v.name] = may_alias ? t.clone() : t;
    else if (!inputs_on_device) result[v.name] = device.download(t);
    else if (!may_alias && !reused) result[v.name] = t;
    else {  // a device copy: the buffer may be a view of an input, or a captured graph's
      std::shared_ptr<void> memory = device.allocate(static_cast<int64_t>(t.nbytes()));
      void* data = memory.get();
      Tensor copy = Tensor::wrap(t.dtype(), t.shape(), std::move(memory), data, device.device());
      device.copy_into(t, copy);
      result[v.name] = std::move(copy);
    }
  }
  return result;
}

std::map<std::string, Tensor> execute(const Executable& exe, ArenaPool& arenas,
                                      const std::map<std::string, Tensor>& inputs, const Options& options,
                                      RunProfile* profile) {
  const auto run_start = std::chrono::steady_clock::now();
  RunState r = bind_inputs(exe, inputs);
  if (capturable(exe, options, profile)) return execute_captured(exe, arenas, r, options);
  // A run that is not captured takes its turn with the session's capture where one may happen: its
  // launches (and timing events) must not land on the stream while it records.
  std::unique_lock<std::mutex> turn;
  if (exe.runtime->can_capture() && options.cuda_graphs) turn = std::unique_lock(arenas.captured().mutex);
  {
    const ArenaLease lease(exe, arenas);
    launch_steps(exe, lease.memory(), r, options, profile);
  }
  exe.runtime->synchronize();  // a fault of the run's kernels is reported here, as its error
  if (profile)
    profile->total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_start).count();
  std::vector<Tensor> outputs;
  for (ValueId id : exe.graph.outputs) outputs.push_back(r.slots[static_cast<size_t>(id)]);
  return collect_outputs(exe, outputs, r.inputs_on_device);
}

}  // namespace kiln::runtime
