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

namespace kiln {

const char* mode_name(Mode m) { return m == Mode::eager ? "eager" : "reference"; }

struct Session::Impl {
  Graph graph;
  Mode mode;
  Options options;
  std::vector<int> last_use;  // per value: index of the last node that reads it (-1: none; outputs: never freed)
};

namespace {

std::vector<int> compute_last_use(const Graph& g) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) last[static_cast<size_t>(v)] = static_cast<int>(i);
  for (ValueId v : g.outputs) last[static_cast<size_t>(v)] = static_cast<int>(g.nodes.size());
  return last;
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
  impl->last_use = compute_last_use(graph);
  impl->graph = std::move(graph);
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
RunStats Session::stats() const { return RunStats{static_cast<int>(impl_->graph.nodes.size())}; }
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
    const Node& n = g.nodes[i];
    ins.clear();
    for (ValueId v : n.inputs) {
      if (v == kNoValue) ins.push_back(nullptr);
      else if (g.value(v).constant) ins.push_back(g.value(v).constant.get());
      else {
        KILN_INTERNAL_CHECK(present[static_cast<size_t>(v)], "executor: {} reads '{}' before it is made",
                            g.describe(n), g.value(v).name);
        ins.push_back(&slots[static_cast<size_t>(v)]);
      }
    }
    auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    std::vector<Tensor> outs = run_node(n, ins, run);
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
    for (ValueId v : n.inputs)  // free what nobody reads any more
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
