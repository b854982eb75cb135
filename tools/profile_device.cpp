// kiln profile --device cuda: the compiled model on the device. Profiled runs launch every kernel on
// the stream (a profiled run is never a replayed graph) and time each step with device events around
// its launch; runs that are not profiled, interleaved with them, replay the captured graph and give the
// end-to-end time a user gets. Both are printed, so the per-kernel times (stream launches) are read
// beside the replay. There is no eager mode on a device: the op table has the device's times alone,
// each fused step's time split evenly over its source nodes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "kiln/session.h"
#include "report/html.h"
#include "report/stats.h"
#include "runtime/inputs.h"
#include "support/error.h"
#include "tools/commands.h"
#include "tools/profile_common.h"

namespace kiln::tools {
namespace {

using nlohmann::json;

constexpr const char* kDeviceRule = "a step's time is split evenly over its source nodes (no eager run on a device)";

bool print_device_op_table(const report::OpTable& t, const std::string& device) {
  std::printf("\ntime by source op type (ms per run on %s, stream launches; %s):\n", device.c_str(), kDeviceRule);
  std::printf("  %-24s %9s %11s %7s\n", "op", "nodes", "ms", "share");
  const double e2e = t.compiled_e2e_ms;
  for (const auto& r : t.rows)
    std::printf("  %-24s %9d %11.3f %6.1f%%\n", r.op.c_str(), r.compiled_nodes, r.compiled_ms,
                e2e > 0 ? 100 * r.compiled_ms / e2e : 0.0);
  std::printf("  %-24s %9s %11.3f\n", "table total", "", t.compiled_table_ms);
  std::printf("  %-24s %9s %11.3f\n", "end to end", "", e2e);
  const bool ok = std::abs(1 - t.compiled_coverage()) <= kCoverageTolerance;
  std::printf("  %-24s %9s %10.1f%%   %s\n", "coverage", "", 100 * t.compiled_coverage(),
              ok ? "(within 5% of end to end: OK)"
                 : "(WARNING: more than 5% of the run is outside the steps: the stream waited on the host's launches)");
  return ok;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int profile_on_device(const ProfileArgs& a, const Options& options, Graph graph,
                      const std::map<std::string, int64_t>& dims) {
  if (a.mode != "compiled")
    user_error("--mode {}: device {} runs compiled mode only (a GPU has no eager kernels)", a.mode, options.device);
  Session compiled = Session::from_graph(std::move(graph), Mode::compiled, options, dims);
  // On the device once, as `kiln run` does: the runs time the device's work, not copies through the host.
  const std::map<std::string, Tensor> inputs = compiled.to_device(make_inputs(compiled.graph(), {}, a.seed));
  // At least two: on a device that captures, the first run launches each kernel, the second captures.
  for (int i = 0; i < std::max(a.warmup, 2); ++i) compiled.run(inputs);

  const size_t iters = static_cast<size_t>(a.iters);
  std::vector<report::TimedRun> runs(iters), replays(iters);
  std::vector<double> replay_ms;
  const auto t0 = std::chrono::steady_clock::now();
  auto profiled = [&](report::TimedRun& r) {
    r.start_us = 1000 * ms_since(t0);
    compiled.run(inputs, &r.profile);
  };
  auto replayed = [&](report::TimedRun& r) {  // an unprofiled run: the graph's replay where there is one
    const auto start = std::chrono::steady_clock::now();
    r.start_us = 1000 * ms_since(t0);
    compiled.run(inputs);
    r.profile.total_ms = ms_since(start);
    replay_ms.push_back(r.profile.total_ms);
  };
  for (size_t i = 0; i < iters; ++i) {  // alternating, the first side rotating
    if (i % 2 == 0) profiled(runs[i]);
    replayed(replays[i]);
    if (i % 2 == 1) profiled(runs[i]);
  }

  const int captures = compiled.stats().graph_captures;
  const std::string replay_what = captures > 0 ? "graph replay"
                                               : "unprofiled runs (no graph captured: cuda_graphs is off)";
  const std::vector<report::KernelTime> kernels = report::kernel_times(runs);
  const double e2e = report::mean_total_ms(runs);
  const report::Summary replay = report::summarize(replay_ms);
  const std::string model_name = tools::model_name(a);
  std::printf("model: %s, device %s\n", model_name.c_str(), options.device.c_str());
  std::printf("per-kernel times are stream launches: device time between events recorded around each step's "
              "launch, in runs that launch every kernel (a profiled run does not replay the CUDA graph)\n");
  print_kernels(kernels, "compiled, " + options.device + ", stream launches", a.iters, e2e, a.top);
  report::OpTable table = report::op_table({}, runs);
  print_device_op_table(table, options.device);
  std::printf("\nend to end on %s: stream launches (the profiled runs) %.3f ms mean; %s %.3f ms median "
              "(p10 %.3f, p90 %.3f) over %d runs interleaved with them\n",
              options.device.c_str(), e2e, replay_what.c_str(), replay.median, replay.p10, replay.p90, replay.n);

  if (!a.trace_file.empty()) {
    std::vector<report::TraceProcess> procs = {{"kiln compiled on " + options.device + ", stream launches", &runs},
                                               {"kiln compiled on " + options.device + ", " + replay_what, &replays}};
    write_report_file(a.trace_file, report::chrome_trace(procs).dump() + "\n");
    std::printf("trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n", a.trace_file.c_str());
  }
  if (!a.json_file.empty() || !a.html_file.empty()) {
    json op_table = report::op_table_json(table);
    op_table["rule"] = kDeviceRule;
    json doc = {{"model", model_name}, {"mode", a.mode}, {"device", options.device}, {"iters", a.iters},
                {"date", utc_date()}, {"dims", dims}, {"steps", kernels.size()}, {"e2e_ms", e2e},
                {"clock", "device events around each stream launch (profiled runs do not replay the graph)"},
                {"launch_e2e_ms", e2e}, {"replay_e2e_ms", replay.median}, {"replay_p10_ms", replay.p10},
                {"replay_p90_ms", replay.p90}, {"replay_runs", replay.n}, {"graph_captures", captures},
                {"kernels", report::kernels_json(kernels, e2e, static_cast<size_t>(a.top))}, {"op_table", op_table}};
    if (!a.json_file.empty()) write_report_file(a.json_file, doc.dump(2) + "\n");
    if (!a.html_file.empty()) write_report_file(a.html_file, report::profile_html(doc));
  }
  return 0;
}

}  // namespace kiln::tools
