// Session: a thin owner of a backend, the Executable compiled for it and the arenas of its runs.
#include "kiln/session.h"

#include <omp.h>

#include <algorithm>

#include "compiler/compile.h"
#include "onnx/import.h"
#include "runtime/backends.h"
#include "runtime/executor.h"
#include "runtime/saved_model.h"
#include "support/error.h"
#include "support/stage_timer.h"

namespace kiln {

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::eager: return "eager";
    case Mode::reference: return "reference";
    case Mode::compiled: return "compiled";
  }
  return "?";
}

std::optional<Mode> mode_from_name(std::string_view name) {
  for (Mode m : {Mode::eager, Mode::reference, Mode::compiled})
    if (name == mode_name(m)) return m;
  return std::nullopt;
}

struct Session::Impl {
  Mode mode;
  Options options;
  std::unique_ptr<backend::Backend> backend;
  compiler::Executable exe;
  mutable runtime::ArenaPool arenas;
};

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

TensorInfo info_of(const Value& v) {
  TensorInfo info{v.name, v.type.dtype, {}};
  for (const Dim& d : v.type.shape) info.dims.push_back(dim_string(d));
  return info;
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session Session::load_onnx(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims) {
  Graph graph = timed(options, "import", [&] { return import_onnx(path, options); });
  return from_graph(std::move(graph), mode, options, dims);
}

Session Session::from_graph(Graph graph, Mode mode, const Options& options,
                            const std::map<std::string, int64_t>& dims) {
  const ThreadScope threads(options.threads);  // autotuning measures on the run's thread count
  const StageTimer timer(options, "prepare");
  auto impl = std::make_unique<Impl>();
  impl->mode = mode;
  impl->options = options;
  impl->backend = timed(options, "backend", [&] { return runtime::make_backend(options, mode); });
  impl->exe = compiler::compile(std::move(graph), *impl->backend, options, mode, dims);
  return Session(std::move(impl));
}

Session Session::load_file(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims) {
  if (!runtime::is_saved_model(path)) return load_onnx(path, mode, options, dims);
  runtime::SavedModel saved = timed(options, "read_saved_model", [&] {
    return runtime::read_saved_model(path, options, mode, dims, [](const Options& o, Mode m) {
      return runtime::make_backend(o, m)->device_key(o);
    });
  });
  // The unpacked folder goes once the kernels are loaded: nothing reads the cache after a compile.
  return from_graph(std::move(saved.graph), saved.mode, saved.options, saved.dims);
}

Session Session::compile_to_file(Graph graph, Mode mode, const Options& options,
                                 const std::map<std::string, int64_t>& dims, const std::string& path) {
  if (options.device != "cpu")  // before the compile, which may take long
    user_error("{}: saved models hold CPU kernels only so far (device {}); a CUDA model compiles when it loads",
               path, options.device);
  Graph imported = graph;  // the file holds the graph as given: loading compiles it again
  PackRecorder packs;       // and the weights its kernels packed, so that the load need not pack them
  Session session = from_graph(std::move(graph), mode, options, dims);
  runtime::write_saved_model(path, imported, mode, options, dims, session.impl_->backend->device_key(options),
                             packs.live_packs());
  return session;
}

std::vector<TensorInfo> Session::inputs() const {
  std::vector<TensorInfo> r;
  for (ValueId v : impl_->exe.graph.inputs) r.push_back(info_of(impl_->exe.graph.value(v)));
  return r;
}
std::vector<TensorInfo> Session::outputs() const {
  std::vector<TensorInfo> r;
  for (ValueId v : impl_->exe.graph.outputs) r.push_back(info_of(impl_->exe.graph.value(v)));
  return r;
}
Mode Session::mode() const { return impl_->mode; }
RunStats Session::stats() const {
  const compiler::PlanStats& p = impl_->exe.plan;
  const backend::TuningStats& t = impl_->exe.tuning;
  RunStats r;
  r.ops = static_cast<int>(impl_->exe.graph.nodes.size());
  r.kernels = p.kernels;
  r.fused_kernels = p.generated;
  r.library_kernels = p.library;
  r.views = p.views;
  r.buffers = p.buffers;
  r.arena_bytes = p.arena_bytes;
  r.bytes_moved = p.bytes_moved;
  r.autotuned_ops = t.tuned_ops;
  r.autotune_benchmarks = t.benchmarks;
  r.template_kernels = t.template_kernels;
  r.blas_kernels = t.blas_kernels;
  runtime::CapturedRun& captured = impl_->arenas.captured();
  std::lock_guard lock(captured.mutex);
  r.graph_captures = captured.captures;
  return r;
}
const Graph& Session::graph() const { return impl_->exe.graph; }

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const {
  return run(inputs, nullptr);
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs, RunProfile* profile) const {
  const ThreadScope threads(impl_->options.threads);
  return runtime::execute(impl_->exe, impl_->arenas, inputs, impl_->options, profile);
}

std::map<std::string, Tensor> Session::to_device(const std::map<std::string, Tensor>& tensors) const {
  std::map<std::string, Tensor> r;
  for (const auto& [name, t] : tensors) r[name] = impl_->exe.runtime->upload(t);
  return r;
}

std::map<std::string, Tensor> Session::to_host(const std::map<std::string, Tensor>& tensors) const {
  std::map<std::string, Tensor> r;
  for (const auto& [name, t] : tensors) r[name] = impl_->exe.runtime->download(t);
  return r;
}

}  // namespace kiln
