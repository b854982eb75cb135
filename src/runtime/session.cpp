#include "kiln/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ir/graph.h"
#include "ir/verifier.h"
#include "onnx/import.h"
#include "ops/node_runner.h"
#include "passes/passes.h"
#include "support/dump.h"
#include "codegen/cpu/emit_pointwise.h"
#include "schedule/fuse_pointwise.h"

namespace kiln {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::eager: return "eager";
    case Mode::reference: return "reference";
    case Mode::compiled: return "compiled";
  }
  return "?";
}

// A generated kernel that replaces a group of nodes; it runs where the group's last node stood.
struct FusedStep {
  schedule::PointwiseGroup group;
  std::vector<std::string> symbols;  // names, in the kernel's syms[] order
  codegen::cpu::PointwiseEntry* fn = nullptr;
};

struct Session::Impl {
  Graph graph;
  Mode mode;
  Options options;
  std::vector<int> last_use;  // per value: index of the last node that reads it (-1: none; outputs: never freed)
  std::vector<int> fused_at;  // per node: index into `fused` when a fused kernel runs there, else -1
  std::vector<char> inlined;  // per node: computed inside a fused kernel, not run on its own
  std::vector<FusedStep> fused;
  std::vector<codegen::cpu::CompiledKernel> libraries;  // keeps the generated code loaded
};

namespace {

// The values a node position reads: its own inputs, a fused kernel's inputs, or nothing if inlined.
std::vector<ValueId> step_inputs(const Session::Impl& s, size_t i) {
  if (s.inlined[i]) return {};
  if (s.fused_at[i] >= 0) return s.fused[size_t(s.fused_at[i])].group.inputs;
  return s.graph.nodes[i].inputs;
}

std::vector<int> compute_last_use(const Session::Impl& s) {
  const Graph& g = s.graph;
  std::vector<int> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : step_inputs(s, i))
      if (v != kNoValue) last[static_cast<size_t>(v)] = static_cast<int>(i);
  for (ValueId v : g.outputs) last[static_cast<size_t>(v)] = static_cast<int>(g.nodes.size());
  return last;
}

// Fuses pointwise chains and compiles them (through the kernel cache).
void compile_fused(Session::Impl& s) {
  std::vector<schedule::PointwiseGroup> groups = schedule::find_pointwise_groups(s.graph);
  std::vector<codegen::cpu::KernelSource> sources;
  for (auto& group : groups) {
    // Name each kernel by its content, so identical groups (every layer's GELU) share one compile.
    group.kernel.name = "pw";
    std::string text = codegen::cpu::emit_pointwise_cpp(group.kernel).source.code;
    group.kernel.name = fmt::format("pw_{:016x}", std::hash<std::string>{}(text));
    codegen::cpu::PointwiseSource src = codegen::cpu::emit_pointwise_cpp(group.kernel);
    sources.push_back(src.source);
    s.fused.push_back(FusedStep{std::move(group), src.symbols, nullptr});
  }
  if (sources.empty()) return;
  s.libraries = codegen::cpu::compile_kernels(sources, s.options);
  for (size_t k = 0; k < sources.size(); ++k) {  // --dump-dir: each source and its exact compile command
    write_dump(s.options, "kernels/" + sources[k].name + ".cpp", sources[k].code);
    write_dump(s.options, "kernels/" + sources[k].name + ".cmd", s.libraries[k].command + "\n");
  }
  for (size_t k = 0; k < s.fused.size(); ++k) {
    FusedStep& f = s.fused[k];
    f.fn = reinterpret_cast<codegen::cpu::PointwiseEntry*>(s.libraries[k].entry(f.group.kernel.name));
    for (size_t j = 0; j + 1 < f.group.nodes.size(); ++j) s.inlined[size_t(f.group.nodes[j])] = 1;
    s.fused_at[size_t(f.group.nodes.back())] = static_cast<int>(k);
  }
}

Tensor run_fused(const FusedStep& f, const Graph& g, const std::vector<const Tensor*>& ins, int64_t max_bytes) {
  std::vector<int64_t> syms;
  std::map<std::string, int64_t> by_name;
  for (size_t k = 0; k < f.group.symbols.size(); ++k) {
    const auto& src = f.group.symbols[k];
    int64_t v = ins[size_t(src.input)]->dim(src.dim);
    syms.push_back(v);
    by_name[f.symbols[k]] = v;
  }
  auto size_of = [&](const Dim& d) { return d.is_static() ? d.value : by_name.at(d.symbol); };
  // The kernel indexes its inputs by these sizes: every input must have exactly them (two symbols
  // that inference assumed equal may not be at run time; reading past a buffer is never an option).
  for (size_t i = 0; i < ins.size(); ++i) {
    const Shape& want = g.value(f.group.inputs[i]).type.shape;
    bool same = static_cast<size_t>(ins[i]->rank()) == want.size();
    for (size_t d = 0; same && d < want.size(); ++d) same = ins[i]->dim(static_cast<int>(d)) == size_of(want[d]);
    if (!same)
      user_error("fused kernel '{}': input '{}' has shape {}, but the model's shapes say {}", f.group.kernel.name,
                 g.value(f.group.inputs[i]).name, ins[i]->shape_string(), shape_string(want));
  }
  const TensorType& out = g.value(f.group.output).type;
  std::vector<int64_t> dims;
  for (const Dim& d : out.shape) dims.push_back(size_of(d));
  Tensor result = Tensor::empty(out.dtype, dims);
  if (static_cast<int64_t>(result.nbytes()) > max_bytes)
    user_error("fused kernel '{}': output of {} bytes exceeds max_tensor_bytes", f.group.kernel.name, result.nbytes());
  std::vector<const void*> ptrs;
  for (const Tensor* t : ins) ptrs.push_back(t->raw());
  f.fn(ptrs.data(), result.raw(), syms.data());
  return result;
}

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

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session Session::load_onnx(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims) {
  return from_graph(import_onnx(path, options), mode, options, dims);
}

Session Session::from_graph(Graph graph, Mode mode, const Options& options,
                            const std::map<std::string, int64_t>& dims) {
  auto impl = std::make_unique<Impl>();
  impl->mode = mode;
  impl->options = options;
  verify_graph(graph, "import");
  prepare_graph(graph, dims, options);
  if (mode == Mode::reference) widen_to_f64(graph, options);
  verify_graph(graph, "prepare");
  impl->graph = std::move(graph);
  impl->fused_at.assign(impl->graph.nodes.size(), -1);
  impl->inlined.assign(impl->graph.nodes.size(), 0);
  if (mode == Mode::compiled) compile_fused(*impl);
  impl->last_use = compute_last_use(*impl);
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
  RunStats r;
  r.ops = static_cast<int>(impl_->graph.nodes.size());
  r.fused_kernels = static_cast<int>(impl_->fused.size());
  for (char in : impl_->inlined) r.kernels += in ? 0 : 1;
  return r;
}
const Graph& Session::graph() const { return impl_->graph; }

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const {
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
  const bool timed = impl_->options.debug_on("ops");
  std::vector<double> op_ms(timed ? kNumOps : 0, 0.0);
  std::vector<int> op_count(timed ? kNumOps : 0, 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (impl_->inlined[i]) continue;
    const Node& n = g.nodes[i];
    const FusedStep* fused = impl_->fused_at[i] >= 0 ? &impl_->fused[size_t(impl_->fused_at[i])] : nullptr;
    ins.clear();
    for (ValueId v : fused ? fused->group.inputs : n.inputs) {
      if (v == kNoValue) ins.push_back(nullptr);
      else if (g.value(v).constant) ins.push_back(g.value(v).constant.get());
      else {
        KILN_INTERNAL_CHECK(present[static_cast<size_t>(v)], "executor: {} reads '{}' before it is made",
                            g.describe(n), g.value(v).name);
        ins.push_back(&slots[static_cast<size_t>(v)]);
      }
    }
    auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs;
    if (fused) outs.push_back(run_fused(*fused, g, ins, run.max_tensor_bytes));
    else outs = run_node(n, ins, run);
    if (timed) {
      op_ms[static_cast<size_t>(n.op)] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      op_count[static_cast<size_t>(n.op)]++;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != kNoValue) {
        slots[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
        present[static_cast<size_t>(n.outputs[k])] = 1;
      }
    for (ValueId v : fused ? fused->group.inputs : n.inputs)  // free what nobody reads any more
      if (v != kNoValue && impl_->last_use[static_cast<size_t>(v)] == static_cast<int>(i))
        slots[static_cast<size_t>(v)] = Tensor();
  }

  if (timed) {  // KILN_DEBUG=ops: time per op type for this run, slowest first
    std::vector<int> order;
    for (int k = 0; k < kNumOps; ++k)
      if (op_count[static_cast<size_t>(k)]) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return op_ms[size_t(a)] > op_ms[size_t(b)]; });
    for (int k : order)
      std::fprintf(stderr, "[ops] %-20s %5d nodes %10.3f ms\n", std::string(op_name(static_cast<OpKind>(k))).c_str(),
                   op_count[size_t(k)], op_ms[size_t(k)]);
  }

  std::map<std::string, Tensor> result;
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
