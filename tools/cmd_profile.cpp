// kiln profile MODEL.onnx: time per kernel over N runs, the time mapped back to source op types (eager
// against compiled), and a Chrome trace. The model runs in both modes, runs alternating. With
// --device cuda the device path (profile_device.cpp) runs instead.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <omp.h>

#include "kiln/graph.h"
#include "kiln/session.h"
#include "onnx/import.h"
#include "report/html.h"
#include "report/profile.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"
#include "support/error.h"
#include "tools/commands.h"
#include "tools/profile_common.h"

namespace kiln::tools {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool print_op_table(const report::OpTable& t) {
  std::printf("\ntime by source op type (ms per run; a step's time is split over its source nodes in proportion "
              "to their eager times, evenly when a node has none):\n");
  std::printf("  %-24s %8s %11s %9s %11s %9s\n", "op", "eager n", "eager ms", "comp. n", "compiled ms", "comp/eager");
  for (const auto& r : t.rows)
    std::printf("  %-24s %8d %11.3f %9d %11.3f %9s\n", r.op.c_str(), r.eager_nodes, r.eager_ms, r.compiled_nodes,
                r.compiled_ms, r.eager_ms > 0 ? fmt::format("{:.2f}", r.compiled_ms / r.eager_ms).c_str() : "-");
  std::printf("  %-24s %8s %11.3f %9s %11.3f\n", "table total", "", t.eager_table_ms, "", t.compiled_table_ms);
  std::printf("  %-24s %8s %11.3f %9s %11.3f\n", "end to end", "", t.eager_e2e_ms, "", t.compiled_e2e_ms);
  bool eager_ok = std::abs(1 - t.eager_coverage()) <= kCoverageTolerance;
  bool compiled_ok = std::abs(1 - t.compiled_coverage()) <= kCoverageTolerance;
  std::printf("  %-24s %8s %10.1f%% %9s %10.1f%%   %s\n", "coverage", "", 100 * t.eager_coverage(), "",
              100 * t.compiled_coverage(),
              eager_ok && compiled_ok ? "(within 5% of end to end: OK)"
                                      : "(WARNING: more than 5% of the run is outside the steps: executor overhead)");
  return eager_ok && compiled_ok;
}

int run(const ProfileArgs& a, Options options) {
  if (a.mode != "compiled" && a.mode != "eager") user_error("--mode must be compiled or eager, got '{}'", a.mode);
  if (a.iters < 1) user_error("--iters must be at least 1");
  if (a.warmup < 0) user_error("--warmup must be >= 0");
  apply_threads(options, a.threads);
  if (!a.device.empty()) options.set("device", a.device);
  Graph graph = a.model.empty() ? demo_transformer() : import_onnx(a.model, options);
  std::map<std::string, int64_t> dims = parse_dims(a.dims);
  check_dims_known(graph, dims);
  dims = resolve_dims(graph, {}, dims);
  if (options.device != "cpu") return profile_on_device(a, options, std::move(graph), dims);
  Session eager = Session::from_graph(Graph(graph), Mode::eager, options, dims);
  Session compiled = Session::from_graph(std::move(graph), Mode::compiled, options, dims);
  std::map<std::string, Tensor> inputs = make_inputs(eager.graph(), {}, a.seed);

  for (int i = 0; i < a.warmup; ++i) {
    eager.run(inputs);
    compiled.run(inputs);
  }
  std::vector<report::TimedRun> eager_runs(static_cast<size_t>(a.iters)), compiled_runs(static_cast<size_t>(a.iters));
  const auto t0 = std::chrono::steady_clock::now();
  auto profiled = [&](const Session& s, report::TimedRun& r) {
    r.start_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    s.run(inputs, &r.profile);
  };
  for (size_t i = 0; i < static_cast<size_t>(a.iters); ++i) {  // alternating, the first side rotating
    if (i % 2 == 0) profiled(eager, eager_runs[i]);
    profiled(compiled, compiled_runs[i]);
    if (i % 2 == 1) profiled(eager, eager_runs[i]);
  }

  const bool is_compiled = a.mode == "compiled";
  const auto& runs = is_compiled ? compiled_runs : eager_runs;
  std::vector<report::KernelTime> kernels = report::kernel_times(runs);
  double e2e = report::mean_total_ms(runs);
  const std::string model_name = tools::model_name(a);
  std::printf("model: %s, %d threads\n", model_name.c_str(), omp_get_max_threads());
  print_kernels(kernels, a.mode, a.iters, e2e, a.top);
  report::OpTable table = report::op_table(eager_runs, compiled_runs);
  print_op_table(table);

  if (!a.trace_file.empty()) {
    std::vector<report::TraceProcess> procs = {{"kiln " + a.mode, &runs},
                                               {std::string("kiln ") + (is_compiled ? "eager" : "compiled"),
                                                is_compiled ? &eager_runs : &compiled_runs}};
    write_report_file(a.trace_file, report::chrome_trace(procs).dump() + "\n");
    std::printf("trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n", a.trace_file.c_str());
  }
  if (!a.json_file.empty() || !a.html_file.empty()) {
    json doc = {{"model", model_name}, {"mode", a.mode}, {"iters", a.iters}, {"threads", omp_get_max_threads()},
                {"date", utc_date()}, {"dims", dims}, {"steps", kernels.size()}, {"e2e_ms", e2e},
                {"kernels", report::kernels_json(kernels, e2e, static_cast<size_t>(a.top))},
                {"op_table", report::op_table_json(table)}};
    if (!a.json_file.empty()) write_report_file(a.json_file, doc.dump(2) + "\n");
    if (!a.html_file.empty()) write_report_file(a.html_file, report::profile_html(doc));
  }
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "time per kernel, time per source op type (eager vs compiled), Chrome trace");
  cmd->add_option("model", args->model, "an .onnx file (default: the bundled demo transformer)");
  cmd->add_option("--mode", args->mode, "whose kernels to list first: compiled (default) or eager");
  cmd->add_option("--device", args->device,
                  "cpu (default) or cuda / cuda:N: per-kernel device time from events around each stream launch, "
                  "beside the graph-replay end-to-end time (the `device` setting)");
  cmd->add_option("--trace", args->trace_file, "write a Chrome trace (Perfetto, chrome://tracing) of every run");
  cmd->add_option("--iters", args->iters, "profiled runs per mode (default 10)");
  cmd->add_option("--warmup", args->warmup, "untimed runs per mode first (default 2; on a device at least 2: the "
                                            "first launches, the second captures the graph)");
  cmd->add_option("--dim", args->dims, "SYMBOL=SIZE for a symbolic dimension (repeatable)");
  cmd->add_option("--threads", args->threads, "worker threads (default: every core)");
  cmd->add_option("--top", args->top, "kernels to list (default 20)");
  cmd->add_option("--seed", args->seed, "seed for the generated inputs");
  cmd->add_option("--json", args->json_file, "write the kernels and the op table as JSON");
  cmd->add_option("--html", args->html_file, "write a self-contained HTML report");
  return {cmd, [args](const Options& options) { return run(*args, options); }};
}

}  // namespace kiln::tools
