#include "kiln/session.h"

#include <omp.h>

#include <algorithm>
#include <mutex>
#include <chrono>
#include <cstdio>

#include "ir/graph.h"
#include "ir/verifier.h"
#include "onnx/import.h"
#include "ops/node_runner.h"
#include "passes/passes.h"
#include "support/dump.h"
#include "codegen/cpu/emit_pointwise.h"
#include "lower/decompose.h"
#include "runtime/plan.h"
#include "codegen/cpu/emit_row.h"
#include "schedule/fuse_pointwise.h"
#include "schedule/fuse_rows.h"
#include "schedule/library_kernel.h"
#include "schedule/softmax_route.h"
#include "autotune/autotuner.h"
#include "autotune/tuning_store.h"
#include "codegen/cpu/kernel_cache.h"
#include <unistd.h>
#include "support/checked_math.h"

namespace kiln {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::eager: return "eager";
    case Mode::reference: return "reference";
    case Mode::compiled: return "compiled";
  }
  return "?";
}

// A generated kernel that computes a group of nodes; it runs as one step.
struct GeneratedKernel {
  std::string name;
  std::vector<ValueId> inputs;
  ValueId output = kNoValue;
  std::vector<schedule::SymbolSource> symbols;  // where each size symbol is read at run time
  std::vector<std::string> symbol_names;        // in the kernel's syms[] order
  codegen::cpu::PointwiseEntry* fn = nullptr;
};

struct Session::Impl {
  Graph graph;
  Mode mode;
  Options options;
  std::vector<runtime::Step> steps;
  std::vector<int> last_use;  // per value: the last step that reads it (graph outputs: never freed)
  runtime::MemoryPlan memory;
  runtime::PlanStats plan;
  std::vector<GeneratedKernel> generated;
  std::vector<codegen::cpu::CompiledKernel> libraries;  // keeps the generated code loaded
  std::vector<std::unique_ptr<schedule::LibraryKernel>> library_calls;
  std::string autotune_summary;  // the autotuner's table of this compile (empty: nothing tuned)
  int autotuned_ops = 0, autotune_benchmarks = 0, template_kernels = 0, blas_kernels = 0;
  // Arenas of finished runs, reused by the next ones (each run holds its own while it runs).
  mutable std::mutex arena_mutex;
  mutable std::vector<std::shared_ptr<void>> arenas;
};

namespace {

// A group a fusion pass found, with the source of its kernel.
struct GeneratedGroup {
  std::vector<NodeId> nodes;
  std::vector<ValueId> inputs;
  ValueId output = kNoValue;
  std::vector<schedule::SymbolSource> symbols;
  codegen::cpu::PointwiseSource source;
  std::string label;
};

// Each kernel is named by its content, so identical groups (every layer's GELU) share one compile.
GeneratedGroup pointwise_group(schedule::PointwiseGroup group) {
  group.kernel.name = "pw";
  std::string text = codegen::cpu::emit_pointwise_cpp(group.kernel).source.code;
  group.kernel.name = fmt::format("pw_{:016x}", std::hash<std::string>{}(text));
  return GeneratedGroup{group.nodes, group.inputs, group.output, group.symbols,
                        codegen::cpu::emit_pointwise_cpp(group.kernel), "pointwise"};
}

GeneratedGroup row_group(schedule::RowGroup group) {
  codegen::cpu::RowEmitOptions emit;
  emit.split_min_cols = group.split_min_cols;
  group.kernel.name = "row";
  std::string text = codegen::cpu::emit_row_cpp(group.kernel, emit).source.code;
  group.kernel.name = fmt::format("row_{:016x}", std::hash<std::string>{}(text));
  codegen::cpu::RowSource src = codegen::cpu::emit_row_cpp(group.kernel, emit);
  return GeneratedGroup{group.nodes, group.inputs, group.output, group.symbols, {src.source, src.symbols}, "row"};
}

// The step of a fused group: it runs where the group's last node stood; `index` selects its kernel.
runtime::Step group_step(runtime::StepKind kind, const std::vector<NodeId>& nodes, const std::vector<ValueId>& inputs,
                         ValueId output, int index, std::string label) {
  runtime::Step step;
  step.kind = kind;
  step.node = nodes.back();
  step.nodes = nodes;
  step.inputs = inputs;
  step.outputs = {output};
  step.index = index;
  step.label = std::move(label);
  return step;
}

void claim(std::vector<char>& claimed, const std::vector<NodeId>& nodes) {
  for (NodeId n : nodes) claimed[size_t(n)] = 1;
}

// Library calls with their fused post-ops, built once (weights prepacked), as steps.
std::vector<runtime::Step> build_library_calls(Session::Impl& s, std::vector<char>& claimed) {
  std::vector<runtime::Step> steps;
  std::unique_ptr<autotune::Autotuner> tuner;  // one per compile: its budget covers the model
  for (auto& group : schedule::find_library_groups(s.graph, claimed, s.options)) {
    std::unique_ptr<schedule::LibraryKernel> kernel;
    try {
      kernel = schedule::build_library_kernel(s.graph, group, s.options);
      if (schedule::worth_tuning(s.graph, group, s.options)) {
        if (!tuner)
          tuner = std::make_unique<autotune::Autotuner>(
              s.options, codegen::cpu::resolve_cache_dir(s.options) / autotune::kTuningStoreFileName);
        kernel = schedule::tune_matmul_kernel(s.graph, group, s.options, *tuner,
                                              schedule::routing_device_key(s.options), std::move(kernel));
      }
    } catch (const UserError&) {
      throw;
    } catch (const InternalError&) {
      throw;
    } catch (const std::exception& e) {
      // The library refused the case (oneDNN has no implementation for these sizes): the nodes stay
      // with the other passes and their eager kernels, which handle every case.
      if (s.options.debug_on("fusion"))
        std::fprintf(stderr, "[fusion] library call %s for %s refused (%s): not fused\n", group.label.c_str(),
                     s.graph.describe(s.graph.nodes[size_t(group.nodes.back())]).c_str(), e.what());
      continue;
    }
    claim(claimed, group.nodes);
    steps.push_back(group_step(runtime::StepKind::library, group.nodes, group.inputs, group.output,
                               static_cast<int>(s.library_calls.size()), group.label));
    s.library_calls.push_back(std::move(kernel));
  }
  if (tuner) {
    s.autotune_summary = tuner->summary_text();
    s.autotuned_ops = static_cast<int>(tuner->results().size());
    s.autotune_benchmarks = tuner->benchmarks_run();
    for (const autotune::TuneResult& r : tuner->results()) {
      s.template_kernels += r.winner.rfind("template:", 0) == 0;
      s.blas_kernels += r.winner == "blas";
    }
    if (tuner->benchmarks_run() > 0 && ::isatty(2)) std::fputs(s.autotune_summary.c_str(), stderr);
  }
  return steps;
}

// Finds the groups of every fusion pass (library calls first, then reductions with their pointwise
// neighbours, then pointwise chains), compiles the generated kernels (through the kernel cache) and
// returns all of them as steps.
std::vector<runtime::Step> compile_fused(Session::Impl& s) {
  const Graph& g = s.graph;
  std::vector<char> claimed(g.nodes.size(), 0);
  std::vector<runtime::Step> steps = build_library_calls(s, claimed);
  std::vector<GeneratedGroup> groups;
  for (auto& group : schedule::find_row_groups(g, claimed, s.options)) {
    claim(claimed, group.nodes);
    groups.push_back(row_group(std::move(group)));
  }
  for (auto& group : schedule::find_pointwise_groups(g, claimed)) groups.push_back(pointwise_group(std::move(group)));

  std::vector<codegen::cpu::KernelSource> sources;
  for (const auto& group : groups) sources.push_back(group.source.source);
  if (!sources.empty()) s.libraries = codegen::cpu::compile_kernels(sources, s.options);
  for (size_t k = 0; k < groups.size(); ++k) {  // --dump-dir: each source and its exact compile command
    GeneratedGroup& group = groups[k];
    write_dump(s.options, "kernels/" + sources[k].name + ".cpp", sources[k].code);
    write_dump(s.options, "kernels/" + sources[k].name + ".cmd", s.libraries[k].command + "\n");
    GeneratedKernel kernel{sources[k].name, group.inputs, group.output, group.symbols, group.source.symbols, nullptr};
    kernel.fn = reinterpret_cast<codegen::cpu::PointwiseEntry*>(s.libraries[k].entry(sources[k].name));
    steps.push_back(group_step(runtime::StepKind::generated, group.nodes, group.inputs, group.output,
                               static_cast<int>(s.generated.size()), group.label + " " + sources[k].name));
    s.generated.push_back(std::move(kernel));
  }
  return steps;
}

// Runs a generated kernel into `out` (a planned buffer), or into a fresh tensor when `out` has no buffer.
Tensor run_generated(const GeneratedKernel& f, const Graph& g, const std::vector<const Tensor*>& ins, Tensor out,
                     int64_t max_bytes) {
  std::vector<int64_t> syms;
  std::map<std::string, int64_t> by_name;
  for (size_t k = 0; k < f.symbols.size(); ++k) {
    const auto& src = f.symbols[k];
    int64_t v = ins[size_t(src.input)]->dim(src.dim);
    syms.push_back(v);
    by_name[f.symbol_names[k]] = v;
  }
  auto size_of = [&](const Dim& d) { return d.is_static() ? d.value : by_name.at(d.symbol); };
  // The kernel indexes its inputs by these sizes: every input must have exactly them (two symbols
  // that inference assumed equal may not be at run time; reading past a buffer is never an option).
  for (size_t i = 0; i < ins.size(); ++i) {
    const Shape& want = g.value(f.inputs[i]).type.shape;
    bool same = static_cast<size_t>(ins[i]->rank()) == want.size();
    for (size_t d = 0; same && d < want.size(); ++d) same = ins[i]->dim(static_cast<int>(d)) == size_of(want[d]);
    if (!same)
      user_error("fused kernel '{}': input '{}' has shape {}, but the model's shapes say {}", f.name,
                 g.value(f.inputs[i]).name, ins[i]->shape_string(), shape_string(want));
  }
  const TensorType& type = g.value(f.output).type;
  std::vector<int64_t> dims;
  for (const Dim& d : type.shape) dims.push_back(size_of(d));
  if (!out.raw()) {
    int64_t bytes = checked_mul(checked_numel(dims, f.name), static_cast<int64_t>(dtype_size(type.dtype)), f.name);
    if (bytes > max_bytes) user_error("fused kernel '{}': output of {} bytes exceeds max_tensor_bytes", f.name, bytes);
    out = Tensor::empty(type.dtype, dims);
  }
  KILN_INTERNAL_CHECK(out.shape() == dims, "fused kernel '{}': planned buffer {} for output of {}", f.name,
                      out.shape_string(), shape_string(type.shape));
  std::vector<const void*> ptrs;
  for (const Tensor* t : ins) ptrs.push_back(t->raw());
  f.fn(ptrs.data(), out.raw(), syms.data());
  return out;
}

// An arena for one run, taken from the session's pool and given back when the run ends.
class ArenaLease {
 public:
  explicit ArenaLease(const Session::Impl& s) : s_(s) {
    if (s.memory.arena_bytes == 0) return;
    {
      std::lock_guard lock(s.arena_mutex);
      if (!s.arenas.empty()) {
        arena_ = std::move(s.arenas.back());
        s.arenas.pop_back();
      }
    }
    if (!arena_) {
      void* p = std::aligned_alloc(64, static_cast<size_t>(s.memory.arena_bytes));
      if (!p) user_error("out of memory allocating a {}-byte arena", s.memory.arena_bytes);
      arena_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    }
  }
  ~ArenaLease() {
    if (!arena_) return;
    std::lock_guard lock(s_.arena_mutex);
    s_.arenas.push_back(std::move(arena_));
  }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;

  // The planned buffer of `v` as a tensor, or an undefined tensor if `v` has none.
  Tensor buffer(const Value& v, ValueId id) const {
    int slot = s_.memory.slot_of[size_t(id)];
    if (slot < 0) return Tensor();
    char* base = static_cast<char*>(arena_.get()) + s_.memory.slot_offset[size_t(slot)];
    return Tensor::wrap(v.type.dtype, static_dims(v.type.shape), arena_, base);
  }

 private:
  const Session::Impl& s_;
  std::shared_ptr<void> arena_;
};

TensorInfo info_of(const Value& v) {
  TensorInfo info{v.name, v.type.dtype, {}};
  for (const Dim& d : v.type.shape) info.dims.push_back(dim_string(d));
  return info;
}

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

StepProfile step_profile(const Graph& g, const runtime::Step& step, double ms) {
  StepProfile p;
  p.kind = runtime::step_kind_name(step.kind);
  p.label = step.label;
  for (NodeId n : step.nodes) {
    p.source_nodes.push_back(g.nodes[size_t(n)].name);
    p.source_ops.push_back(std::string(op_name(g.nodes[size_t(n)].op)));
  }
  for (ValueId v : step.inputs) p.input_types.push_back(v == kNoValue ? "" : type_string(g.value(v).type));
  for (ValueId v : step.outputs)
    if (v != kNoValue) p.output_type += (p.output_type.empty() ? "" : ", ") + type_string(g.value(v).type);
  p.ms = ms;
  return p;
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

namespace {

// The `threads` setting for the length of a compile or a run, restored afterwards: OpenMP's thread count
// belongs to the calling thread, and a program that embeds kiln keeps its own.
class ThreadScope {
 public:
  explicit ThreadScope(int64_t threads) : saved_(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(static_cast<int>(std::min<int64_t>(threads, 1 << 16)));
  }
  ~ThreadScope() { omp_set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace

Session Session::load_onnx(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims) {
  return from_graph(import_onnx(path, options), mode, options, dims);
}

Session Session::from_graph(Graph graph, Mode mode, const Options& options,
                            const std::map<std::string, int64_t>& dims) {
  const ThreadScope threads(options.threads);  // autotuning measures on the run's thread count
  auto impl = std::make_unique<Impl>();
  impl->mode = mode;
  impl->options = options;
  verify_graph(graph, "import");
  prepare_graph(graph, dims, options);
  if (mode == Mode::reference) widen_to_f64(graph, options);
  if (mode == Mode::compiled) {  // ops the fusion passes do not know, rewritten into ones they do
    lower::DecompositionTable decompositions;
    lower::register_decompositions(decompositions);
    if (lower::decompose(graph, decompositions) > 0) infer_shapes(graph, options);
    dump_ir(graph, options, 2, "decompose");
  }
  verify_graph(graph, "prepare");
  // Inputs are allocated from their declared types (kiln run makes them): check the size first.
  for (ValueId id : graph.inputs) {
    const Value& v = graph.value(id);
    if (!is_static(v.type.shape)) continue;
    int64_t bytes = checked_mul(checked_numel(static_dims(v.type.shape), "input '" + v.name + "'"),
                                static_cast<int64_t>(dtype_size(v.type.dtype)), "input '" + v.name + "'");
    if (bytes > options.max_tensor_bytes)
      user_error("input '{}' ({}) takes {} bytes, more than max_tensor_bytes ({})", v.name, type_string(v.type), bytes,
                 options.max_tensor_bytes);
  }
  impl->graph = std::move(graph);
  const Graph& g = impl->graph;
  std::vector<runtime::Step> fused;
  if (mode == Mode::compiled) fused = compile_fused(*impl);
  std::vector<int> step_of_node;
  impl->steps = runtime::make_steps(g, std::move(fused), step_of_node);
  impl->last_use = runtime::last_uses(g, impl->steps);
  impl->memory = runtime::plan_memory(g, impl->steps);
  impl->plan = runtime::plan_stats(g, impl->steps, impl->memory);
  if (options.debug_on("fusion") || !options.dump_dir.empty()) {
    std::string text = runtime::plan_text(g, impl->steps, impl->memory);
    text += fmt::format("# {} ops, {} kernels ({} generated, {} library), {} views; {} buffers in a {}-byte arena "
                        "for {} planned bytes; {} bytes moved\n",
                        g.nodes.size(), impl->plan.kernels, impl->plan.generated, impl->plan.library, impl->plan.views,
                        impl->plan.buffers, impl->plan.arena_bytes, impl->plan.planned_bytes, impl->plan.bytes_moved);
    if (options.debug_on("fusion")) std::fprintf(stderr, "# plan\n%s", text.c_str());
    write_dump(options, "03_plan.txt", text);
  }
  return Session(std::move(impl));
}

std::vector<TensorInfo> Session::inputs() const {
  std::vector<TensorInfo> r;
  for (ValueId v : impl_->graph.inputs) r.push_back(info_of(impl_->graph.value(v)));
  return r;
}
std::vector<TensorInfo> Session::outputs() const {
  std::vector<TensorInfo> r;
  for (ValueId v : impl_->graph.outputs) r.push_back(info_of(impl_->graph.value(v)));
  return r;
}
Mode Session::mode() const { return impl_->mode; }
RunStats Session::stats() const {
  const runtime::PlanStats& p = impl_->plan;
  RunStats r;
  r.ops = static_cast<int>(impl_->graph.nodes.size());
  r.kernels = p.kernels;
  r.fused_kernels = p.generated;
  r.library_kernels = p.library;
  r.views = p.views;
  r.buffers = p.buffers;
  r.arena_bytes = p.arena_bytes;
  r.bytes_moved = p.bytes_moved;
  r.autotuned_ops = impl_->autotuned_ops;
  r.autotune_benchmarks = impl_->autotune_benchmarks;
  r.template_kernels = impl_->template_kernels;
  r.blas_kernels = impl_->blas_kernels;
  return r;
}
const Graph& Session::graph() const { return impl_->graph; }

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const {
  return run(inputs, nullptr);
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs, RunProfile* profile) const {
  const auto run_start = std::chrono::steady_clock::now();
  const ThreadScope threads(impl_->options.threads);
  const Graph& g = impl_->graph;
  std::vector<Tensor> slots(g.values.size());
  std::vector<char> present(g.values.size(), 0);
  std::map<std::string, int64_t> bound;
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) user_error("input '{}' ({}) was not given", v.name, type_string(v.type));
    Tensor t = it->second;
    if (impl_->mode == Mode::reference && is_float(t.dtype())) t = convert_tensor(t, DType::f64);
    if (t.dtype() != v.type.dtype)
      user_error("input '{}': expected dtype {}, got {}", v.name, dtype_name(v.type.dtype), dtype_name(t.dtype()));
    check_input(v, t, bound);
    slots[static_cast<size_t>(id)] = std::move(t);
    present[static_cast<size_t>(id)] = 1;
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (ValueId id : g.inputs) known = known || g.value(id).name == name;
    if (!known) user_error("'{}' is not an input of this model", name);
  }

  NodeRunOptions run;
  run.kernel.reference = impl_->mode == Mode::reference;
  run.kernel.threads = omp_get_max_threads();
  run.max_rank = impl_->options.max_rank;
  run.max_tensor_bytes = impl_->options.max_tensor_bytes;
  std::vector<const Tensor*> ins;
  const bool timed = impl_->options.debug_on("ops") || profile;
  if (profile) {
    *profile = RunProfile{};
    profile->threads = omp_get_max_threads();
  }
  std::vector<double> op_ms(timed ? kNumOps : 0, 0.0);
  std::vector<int> op_count(timed ? kNumOps : 0, 0);
  ArenaLease arena(*impl_);
  std::vector<Tensor> planned;
  for (size_t i = 0; i < impl_->steps.size(); ++i) {
    const runtime::Step& step = impl_->steps[i];
    const Node& n = g.nodes[size_t(step.node)];
    ins.clear();
    for (ValueId v : step.inputs) {
      if (v == kNoValue) ins.push_back(nullptr);
      else if (g.value(v).constant) ins.push_back(g.value(v).constant.get());
      else {
        KILN_INTERNAL_CHECK(present[static_cast<size_t>(v)], "executor: {} reads '{}' before it is made",
                            g.describe(n), g.value(v).name);
        ins.push_back(&slots[static_cast<size_t>(v)]);
      }
    }
    planned.clear();
    for (ValueId v : step.outputs) planned.push_back(v == kNoValue ? Tensor() : arena.buffer(g.value(v), v));
    auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs;
    if (step.kind == runtime::StepKind::generated)
      outs.push_back(run_generated(impl_->generated[size_t(step.index)], g, ins, planned[0], run.max_tensor_bytes));
    else if (step.kind == runtime::StepKind::library)
      outs.push_back(impl_->library_calls[size_t(step.index)]->run(ins, run.max_tensor_bytes, planned[0]));
    else
      outs = run_node(n, ins, run, &planned);
    if (timed) {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      op_ms[static_cast<size_t>(n.op)] += ms;
      op_count[static_cast<size_t>(n.op)]++;
      if (profile) profile->steps.push_back(step_profile(g, step, ms));
    }
    for (size_t k = 0; k < step.outputs.size(); ++k)
      if (step.outputs[k] != kNoValue) {
        slots[static_cast<size_t>(step.outputs[k])] = std::move(outs[k]);
        present[static_cast<size_t>(step.outputs[k])] = 1;
      }
    for (ValueId v : step.inputs)  // drop what nobody reads any more
      if (v != kNoValue && impl_->last_use[static_cast<size_t>(v)] == static_cast<int>(i))
        slots[static_cast<size_t>(v)] = Tensor();
  }

  if (timed && impl_->options.debug_on("ops")) {  // KILN_DEBUG=ops: time per op type for this run, slowest first
    std::vector<int> order;
    for (int k = 0; k < kNumOps; ++k)
      if (op_count[static_cast<size_t>(k)]) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return op_ms[size_t(a)] > op_ms[size_t(b)]; });
    for (int k : order)
      std::fprintf(stderr, "[ops] %-20s %5d nodes %10.3f ms\n", std::string(op_name(static_cast<OpKind>(k))).c_str(),
                   op_count[size_t(k)], op_ms[size_t(k)]);
  }

  std::map<std::string, Tensor> result;
  if (profile)
    profile->total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_start).count();
  for (ValueId id : g.outputs) {
    const Value& v = g.value(id);
    // Outputs never alias the session's constants: a caller may write into what it gets.
    bool may_alias = v.constant || (v.producer >= 0 && op_registry().find(g.nodes[static_cast<size_t>(v.producer)].op)
                                                           ->kernel_makes_outputs);
    const Tensor& t = v.constant ? *v.constant : slots[static_cast<size_t>(id)];
    result[v.name] = may_alias ? t.clone() : t;
  }
  return result;
}

}  // namespace kiln
