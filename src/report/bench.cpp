#include "report/bench.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "kiln/graph.h"
#include "kiln/session.h"
#include "onnx/import.h"
#include "kiln/tensor_io.h"
#include "report/accuracy.h"
#include "report/ort_peer.h"
#include "report/profile.h"
#include "report/stats.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"
#include "support/error.h"

namespace kiln::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string file_name_for(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  return s.empty() || s[0] == '.' ? "_" + s : s;
}

json accuracy_json(const OutputsAccuracy& a) {
  return {{"result", a.pass ? "pass" : "fail"}, {"rule", a.rule}, {"detail", a.detail}};
}

void add_summary(json& record, const std::string& side, const std::optional<Summary>& s) {
  record[side + "_ms"] = s ? json(s->median) : json();
  record[side + "_p10_ms"] = s ? json(s->p10) : json();
  record[side + "_p90_ms"] = s ? json(s->p90) : json();
}

}  // namespace

json bench_model(const BenchModel& m, const BenchSettings& s, const Options& options, OrtPeer* peer, int threads) {
  auto note = [&](const std::string& what) { std::fprintf(stderr, "[bench %s] %s\n", m.name.c_str(), what.c_str()); };
  if (peer && m.path.empty()) user_error("--peer ort needs an .onnx file; the bundled demo model has none");
  // On a device only the compiled model runs there; kiln's eager kernels on the CPU stay the accuracy
  // baseline (a GPU has no eager mode) and are not timed.
  const bool on_device = options.device != "cpu";
  KILN_INTERNAL_CHECK(!(on_device && peer), "bench: ONNX Runtime is a CPU peer");
  Options cpu_options = options;
  cpu_options.device = "cpu";
  // Eager mode runs fp32: a compiled side in bf16 / fp16 answers to it (and to ONNX Runtime) by the
  // low-precision rule.
  cpu_options.precision = "fp32";
  const bool low_precision = options.precision != "fp32";
  note("loading");
  Graph graph = m.path.empty() ? demo_transformer() : import_onnx(m.path, options);
  std::map<std::string, int64_t> dims = resolve_dims(graph, {}, m.dims);

  auto t0 = Clock::now();
  Session eager = Session::from_graph(Graph(graph), Mode::eager, cpu_options, dims);
  double prepare_s_eager = seconds_since(t0);
  std::map<std::string, Tensor> inputs = make_inputs(eager.graph(), {}, s.seed);

  // Compile time: first against an empty private cache (every kernel compiled), then again against
  // the same cache (every kernel found). The user's own cache is never touched.
  TempDir cache("kiln_bench_cache_");
  Options compile_options = options;
  compile_options.cache_dir = cache.path().string();
  note("compiling (cold cache)");
  t0 = Clock::now();
  std::optional<Session> cold = Session::from_graph(Graph(graph), Mode::compiled, compile_options, dims);
  double compile_s_cold = seconds_since(t0);
  cold.reset();
  t0 = Clock::now();
  Session compiled = Session::from_graph(Graph(graph), Mode::compiled, compile_options, dims);
  double compile_s_warm = seconds_since(t0);
  // As `kiln run` does: on a device the timed runs read inputs already there (the host's own tensors on the CPU).
  const std::map<std::string, Tensor> compiled_inputs = compiled.to_device(inputs);

  TempDir work("kiln_bench_");
  if (peer) {
    note("loading into ONNX Runtime");
    std::map<std::string, std::string> files;
    fs::create_directories(work.path() / "inputs");
    for (const auto& [name, t] : inputs) {
      std::string file = (work.path() / "inputs" / (file_name_for(name) + ".npy")).string();
      write_npy(file, t);
      files[name] = file;
    }
    peer->load(m.path, threads, files);
  }

  note("checking accuracy");
  Outputs eager_out = eager.run(inputs), compiled_out = compiled.run(inputs), peer_out;
  if (peer) {
    peer->run();
    for (const auto& [name, file] : peer->save_outputs((work.path() / "ort").string()))
      peer_out[name] = read_npy(file, options);
  }
  std::optional<Outputs> oracle;
  auto fp64_oracle = [&]() -> const Outputs& {
    if (!oracle) {
      note("allclose missed: running the fp64 reference for the RMSE rule");
      Session reference = Session::from_graph(Graph(graph), Mode::reference, options, dims);
      oracle = reference.run(inputs);
    }
    return *oracle;
  };
  auto compare = [&](const Outputs& reference) {
    return low_precision ? compare_low_precision(compiled_out, reference)
                         : compare_outputs(compiled_out, reference, fp64_oracle, s.tol, s.multiplier);
  };
  OutputsAccuracy vs_eager = compare(eager_out);
  std::optional<OutputsAccuracy> vs_peer;
  if (peer) vs_peer = compare(peer_out);
  eager_out.clear();  // free the outputs and the oracle's f64 copies before timing
  compiled_out.clear();
  peer_out.clear();
  oracle.reset();

  // Each repeat runs every side once, the starting side rotating, so drift and order hit all alike.
  // On a device at least two warm-up runs: the first launches each kernel, the second captures the graph.
  const int warmup = on_device ? std::max(s.warmup, 2) : s.warmup;
  note(fmt::format("timing: {} warm-up and {} timed runs per side", warmup, s.iters));
  std::vector<int> sides = {0, 1};  // eager, compiled, ONNX Runtime
  if (on_device) sides = {1};
  if (peer) sides.push_back(2);
  std::vector<std::vector<double>> times(3);
  // A pause before each side's turn, so that the other side's spinning worker threads have stopped. None
  // on a device: no CPU worker threads spin there, and an idle GPU may lower its clocks.
  auto settle = [&] {
    if (s.settle_ms > 0 && !on_device) std::this_thread::sleep_for(std::chrono::milliseconds(s.settle_ms));
  };
  auto run_side = [&](int side) {
    if (side == 2) return peer->run();
    auto start = Clock::now();
    if (side == 0) eager.run(inputs);
    else compiled.run(compiled_inputs);
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  for (int i = 0; i < warmup; ++i)
    for (int side : sides) {
      settle();
      run_side(side);
    }
  // Timed in blocks: a side's runs follow each other, after one untimed run, as a user's would. Run by
  // run alternation timed each side just after another had run and made every side slower (kiln's
  // audio_cnn 5 -> 15 ms next to ONNX Runtime, no matter the pause between them). Five blocks a side,
  // the starting side rotating, so that drift hits every side alike.
  const int blocks = std::min(5, std::max(1, s.iters));
  for (int b = 0; b < blocks; ++b)
    for (size_t j = 0; j < sides.size(); ++j) {
      const int side = sides[(static_cast<size_t>(b) + j) % sides.size()];
      const int runs = s.iters / blocks + (b < s.iters % blocks ? 1 : 0);
      settle();
      run_side(side);
      for (int i = 0; i < runs; ++i) times[static_cast<size_t>(side)].push_back(run_side(side));
    }
  if (peer) peer->unload();

  // On a device: stream launches timed with device events (a profiled run does not replay the graph).
  std::vector<TimedRun> profiled(static_cast<size_t>(std::max(0, s.profile_runs)));
  for (TimedRun& r : profiled) compiled.run(compiled_inputs, &r.profile);

  json record;
  record["model"] = m.name;
  record["path"] = m.path.empty() ? json() : json(m.path);
  record["dims"] = dims;
  record["threads"] = threads;
  record["iters"] = s.iters;
  record["precision"] = options.precision;
  record["warmup"] = warmup;
  std::optional<Summary> es = on_device ? std::nullopt : std::optional<Summary>(summarize(times[0]));
  Summary cs = summarize(times[1]);
  std::optional<Summary> os = peer ? std::optional<Summary>(summarize(times[2])) : std::nullopt;
  add_summary(record, "eager", es);
  add_summary(record, "compiled", cs);
  add_summary(record, "ort", os);
  record["speedup_vs_eager"] = es && cs.median > 0 ? json(es->median / cs.median) : json();
  record["speedup_vs_ort"] = os && cs.median > 0 ? json(os->median / cs.median) : json();
  record["compile_s_cold"] = compile_s_cold;
  record["compile_s_warm"] = compile_s_warm;
  record["prepare_s_eager"] = prepare_s_eager;
  RunStats es_stats = eager.stats(), cs_stats = compiled.stats();
  record["ops"] = es_stats.ops;
  record["kernels"] = cs_stats.kernels;
  record["generated_kernels"] = cs_stats.fused_kernels;
  record["library_kernels"] = cs_stats.library_kernels;
  bool pass = vs_eager.pass && (!vs_peer || vs_peer->pass);
  record["accuracy"] = pass ? "pass" : "fail";
  // The rule that decided: a failure's, else the weaker of the two passes (rmse over allclose).
  const OutputsAccuracy& decisive = !vs_eager.pass || !vs_peer ? vs_eager
                                    : !vs_peer->pass || vs_peer->rule != "allclose" ? *vs_peer
                                                                                    : vs_eager;
  record["rule"] = decisive.rule;
  record["accuracy_vs_eager"] = accuracy_json(vs_eager);
  record["accuracy_vs_ort"] = vs_peer ? accuracy_json(*vs_peer) : json();
  record["oracle"] = vs_eager.used_oracle || (vs_peer && vs_peer->used_oracle) ? "fp64 reference run"
                                                                                : "not needed (allclose passed)";
  record["times_ms"] = {{"eager", es ? json(times[0]) : json()}, {"compiled", times[1]},
                        {"ort", peer ? json(times[2]) : json()}};
  if (on_device) {
    record["device"] = options.device;
    record["accuracy_baseline"] = "kiln eager on the CPU";
    record["graph_captures"] = cs_stats.graph_captures;
    record["top_kernels_clock"] = "device events around each stream launch (profiled runs do not replay the graph)";
  }
  record["top_kernels"] = kernels_json(kernel_times(profiled), mean_total_ms(profiled),
                                       static_cast<size_t>(std::max(0, s.top_kernels)));
  return record;
}

}  // namespace kiln::report
