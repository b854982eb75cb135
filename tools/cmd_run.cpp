// kiln run MODEL.onnx: load, prepare, run, time, write outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <optional>
#include <sys/resource.h>

#include "kiln/graph.h"
#include "kiln/session.h"
#include "onnx/import.h"
#include "kiln/tensor_io.h"
#include "ops/node_runner.h"
#include "runtime/inputs.h"
#include "runtime/saved_model.h"
#include "support/error.h"
#include "tools/commands.h"
#include "runtime/demo_model.h"

namespace kiln::tools {
namespace {

struct RunArgs {
  std::string model;
  std::string mode = "compiled";
  std::string device;     // empty: the `device` setting
  std::string precision;  // empty: the `precision` setting
  std::vector<std::string> inputs, dims;
  uint64_t seed = 0;
  std::string output_dir, save_inputs, dump_dir;
  int iters = 0;   // 0: as many as fit in kAutoItersBudgetMs, from 1 to kAutoItersMax
  int warmup = 1;
  int64_t threads = 0;
  bool json = false;
};

// The default timing: enough runs for a steady median, without making one slow model's run take long.
constexpr int kAutoItersMax = 20;
constexpr double kAutoItersBudgetMs = 1000;

// The value at fraction q of sorted `times` (nearest rank).
// The process's peak resident memory so far (getrusage), in bytes.
int64_t peak_resident_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// The bytes of the constants the prepared graph holds (the weights, folded values included).
int64_t constant_bytes(const Graph& g) {
  int64_t bytes = 0;
  for (const Value& v : g.values)
    if (v.constant) bytes += static_cast<int64_t>(v.constant->nbytes());
  return bytes;
}

double percentile(const std::vector<double>& times, double q) {
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(times.size())));
  return times[std::clamp<size_t>(rank, 1, times.size()) - 1];
}

Mode parse_mode(const std::string& m) {
  if (std::optional<Mode> mode = mode_from_name(m)) return *mode;
  user_error("--mode must be eager, reference or compiled, got '{}'", m);
}

Tensor read_input_file(const std::string& path, const Options& options) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return read_npy(path, options);
  if (ext == ".pb") return read_tensor_pb(path, options);
  user_error("--input {}: expected a .npy or .pb file", path);
}

std::string safe_file_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  if (s.empty() || s[0] == '.') s = "_" + s;
  return s;
}

int run(const RunArgs& a, Options options) {
  apply_threads(options, a.threads);
  if (!a.dump_dir.empty()) options.dump_dir = a.dump_dir;
  if (!a.device.empty()) options.set("device", a.device);  // held to the settings table's values
  if (!a.precision.empty()) options.set("precision", a.precision);
  if (a.iters < 0) user_error("--iters must be at least 1 (or 0: as many as fit in a second, up to {})", kAutoItersMax);
  if (a.warmup < 0) user_error("--warmup must be >= 0");
  Mode mode = parse_mode(a.mode);

  std::map<std::string, Tensor> given;
  for (const auto& item : a.inputs) {
    auto [name, path] = split_assignment(item, "--input");
    if (given.count(name)) user_error("--input {}: given twice", name);
    given[name] = read_input_file(path, options);
  }
  std::map<std::string, int64_t> dims = parse_dims(a.dims);

  auto check_input_names = [&given](const Graph& graph) {
    for (const auto& [name, t] : given) {
      bool known = false;
      for (ValueId id : graph.inputs) known = known || graph.value(id).name == name;
      if (!known) user_error("--input {}: the model has no input of that name", name);
    }
  };
  // A saved model (kiln compile -o) is its own prepared graph: its preparation is all of loading it.
  const bool saved = !a.model.empty() && runtime::is_saved_model(a.model);
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Session> prepared;
  if (saved) {
    prepared.emplace(Session::load_file(a.model, mode, options, dims));
    check_input_names(prepared->graph());
  } else {
    Graph graph = a.model.empty() ? demo_transformer() : import_onnx(a.model, options);
    check_input_names(graph);
    check_dims_known(graph, dims);
    dims = resolve_dims(graph, given, dims);
    t0 = std::chrono::steady_clock::now();
    prepared.emplace(Session::from_graph(std::move(graph), mode, options, dims));
  }
  const Session& session = *prepared;
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::map<std::string, Tensor> inputs = make_inputs(session.graph(), given, a.seed);

  if (!a.save_inputs.empty()) {
    std::filesystem::create_directories(a.save_inputs);
    for (const auto& [name, t] : inputs)
      write_npy((std::filesystem::path(a.save_inputs) / (safe_file_name(name) + ".npy")).string(), t);
  }

  // On a device the inputs go there once and the outputs stay there: the timed runs are the device's
  // work (and the launches), not copies through the host.
  const std::map<std::string, Tensor> run_inputs = session.to_device(inputs);
  std::vector<double> times;
  std::map<std::string, Tensor> outputs;
  // The first run's time, warm-up or not: on a device it also picks the measured choices (from the tuning
  // store, or by timing them) and loads what they need.
  double first_run_ms = -1;
  auto timed_run = [&] {
    const auto start = std::chrono::steady_clock::now();
    outputs = session.run(run_inputs);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (first_run_ms < 0) first_run_ms = ms;
    return ms;
  };
  for (int i = 0; i < a.warmup; ++i) timed_run();
  const int max_iters = a.iters > 0 ? a.iters : kAutoItersMax;
  double spent_ms = 0;
  for (int i = 0; i < max_iters; ++i) {
    times.push_back(timed_run());
    spent_ms += times.back();
    if (a.iters == 0 && spent_ms >= kAutoItersBudgetMs) break;
  }
  const int iters = static_cast<int>(times.size());
  outputs = session.to_host(outputs);
  std::sort(times.begin(), times.end());
  double median = times.size() % 2 ? times[times.size() / 2]
                                   : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);

  std::map<std::string, std::string> files;
  if (!a.output_dir.empty()) {
    std::filesystem::create_directories(a.output_dir);
    for (const auto& [name, t] : outputs) {
      std::string path = (std::filesystem::path(a.output_dir) / (safe_file_name(name) + ".npy")).string();
      // NumPy has no bfloat16: such outputs are written widened to f32, which is exact.
      write_npy(path, t.dtype() == DType::bf16 ? convert_tensor(t, DType::f32) : t);
      files[name] = path;
    }
  }

  std::string model_name = a.model.empty() ? "(bundled demo transformer)" : a.model;
  if (a.json) {
    nlohmann::json j;
    j["model"] = model_name;
    j["mode"] = mode_name(mode);
    j["device"] = options.device;
    j["precision"] = mode == Mode::reference ? "fp64" : options.precision;
    j["threads"] = omp_get_max_threads();
    j["iters"] = iters;
    j["warmup"] = a.warmup;
    j["latency_ms"] = median;
    j["latency_p90_ms"] = percentile(times, 0.9);
    j["latency_p99_ms"] = percentile(times, 0.99);
    j["latency_min_ms"] = times.front();
    j["latency_max_ms"] = times.back();
    j["prepare_ms"] = prepare_ms;
    j["first_run_ms"] = first_run_ms;
    j["ops"] = session.stats().ops;
    j["kernels"] = session.stats().kernels;
    RunStats st = session.stats();
    j["fused_kernels"] = st.fused_kernels;
    j["autotune_benchmarks"] = st.autotune_benchmarks;
    j["saved_model"] = saved;
    j["library_kernels"] = st.library_kernels;
    j["views"] = st.views;
    j["buffers"] = st.buffers;
    j["arena_bytes"] = st.arena_bytes;
    j["bytes_moved"] = st.bytes_moved;
    j["graph_captures"] = st.graph_captures;
    j["peak_resident_bytes"] = peak_resident_bytes();
    j["constant_bytes"] = constant_bytes(session.graph());
    j["outputs"] = nlohmann::json::array();
    for (const auto& info : session.outputs()) {
      const Tensor& t = outputs.at(info.name);
      nlohmann::json o{{"name", info.name}, {"shape", t.shape()}, {"dtype", dtype_name(t.dtype())}};
      if (files.count(info.name)) o["file"] = files[info.name];
      j["outputs"].push_back(o);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model: %s\ndevice: %s, mode: %s, precision: %s, threads: %d, ops: %d, kernels per run: %d (%d generated, %d library), "
              "prepared in %.1f ms (first run %.1f ms)\n",
              model_name.c_str(), options.device.c_str(), mode_name(mode),
              mode == Mode::reference ? "fp64" : options.precision.c_str(), omp_get_max_threads(), session.stats().ops,
              session.stats().kernels, session.stats().fused_kernels, session.stats().library_kernels, prepare_ms, first_run_ms);
  for (const auto& info : session.outputs()) {
    const Tensor& t = outputs.at(info.name);
    std::printf("output %s: %s%s%s\n", info.name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
                t.shape_string().c_str(), files.count(info.name) ? (" -> " + files[info.name]).c_str() : "");
  }
  std::printf("latency: median %.3f ms over %d iteration%s after %d warm-up (p90 %.3f, p99 %.3f, min %.3f, max %.3f)\n",
              median, iters, iters == 1 ? "" : "s", a.warmup, percentile(times, 0.9), percentile(times, 0.99),
              times.front(), times.back());
  std::printf("memory: peak resident %.1f MB, constants %.1f MB\n", peak_resident_bytes() / 1e6,
              constant_bytes(session.graph()) / 1e6);
  if (options.device != "cpu")
    std::printf("graph captures: %d (the first run launches each kernel, the second captures, later runs replay)\n",
                session.stats().graph_captures);
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "run a model (default: a small bundled transformer)");
  cmd->add_option("model", args->model, "an .onnx file, or a saved model (kiln compile -o)");
  cmd->add_option("--mode", args->mode, "compiled (default: fused generated kernels and library calls), eager (one kernel per op) or reference (the fp64 oracle)");
  cmd->add_option("--device", args->device, "cpu (default) or cuda / cuda:N: where the model runs (the `device` setting)");
  cmd->add_option("--precision", args->precision,
                  "fp32 (default), bf16 or fp16: what a compiled model computes in (the `precision` setting; bf16 and "
                  "fp16 on --device cuda; on the CPU, bf16 for the oneDNN products where it has AVX512_BF16 or AMX)");
  cmd->add_option("--input", args->inputs, "NAME=FILE.npy or NAME=FILE.pb (repeatable)");
  cmd->add_option("--dim", args->dims, "SYMBOL=SIZE for a symbolic dimension (repeatable)");
  cmd->add_option("--seed", args->seed, "seed for generated inputs");
  cmd->add_option("--output-dir", args->output_dir, "write each output as NAME.npy here");
  cmd->add_option("--save-inputs", args->save_inputs, "write the inputs used (given or generated) as NAME.npy here");
  cmd->add_option("--iters", args->iters,
                  "timed iterations (median, p90, p99 reported; default 0: as many as fit in a second, up to 20)");
  cmd->add_option("--warmup", args->warmup, "untimed runs before the timed ones (default 1)");
  cmd->add_option("--threads", args->threads, "worker threads (default: every core)");
  cmd->add_flag("--json", args->json, "print one JSON object instead of text");
  cmd->add_option("--dump-dir", args->dump_dir, "write the IR after every step and each generated kernel here");
  return {cmd, [args](const Options& options) { return run(*args, options); }};
}

}  // namespace kiln::tools
