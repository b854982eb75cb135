// What `kiln profile` reports: time per kernel over many runs, the time mapped back to the source op
// types (eager against compiled), and a Chrome trace (Perfetto loads it).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/session.h"

namespace kiln::report {

// One run's profile and when it started (microseconds from the first profiled run of any mode).
struct TimedRun {
  double start_us = 0;
  RunProfile profile;
};

// One step of the plan, its time averaged over the runs.
struct KernelTime {
  int step = 0;  // position in the plan
  std::string kind, label, output_type;
  std::vector<std::string> source_nodes, source_ops, input_types;
  double mean_ms = 0;  // per run
};
std::vector<KernelTime> kernel_times(const std::vector<TimedRun>& runs);  // in plan order
double mean_total_ms(const std::vector<TimedRun>& runs);                 // end to end, per run

// Time per source op type, per run. A step's time is split over its source nodes in proportion to
// those nodes' eager times (matched by node name); when a node has no eager time (the compiled graph
// made it) or they sum to zero, evenly. So a fused matmul+bias+gelu counts mostly as MatMul.
struct OpRow {
  std::string op;
  int eager_nodes = 0, compiled_nodes = 0;
  double eager_ms = 0, compiled_ms = 0;
};
struct OpTable {
  std::vector<OpRow> rows;  // slowest compiled first
  double eager_table_ms = 0, compiled_table_ms = 0;  // the rows' sums (every step's time)
  double eager_e2e_ms = 0, compiled_e2e_ms = 0;      // RunProfile::total_ms, mean per run
  double eager_coverage() const { return eager_e2e_ms > 0 ? eager_table_ms / eager_e2e_ms : 0; }
  double compiled_coverage() const { return compiled_e2e_ms > 0 ? compiled_table_ms / compiled_e2e_ms : 0; }
};
OpTable op_table(const std::vector<TimedRun>& eager, const std::vector<TimedRun>& compiled);

// The kernels and the op table as JSON (what --json writes and the HTML report draws).
nlohmann::json kernels_json(const std::vector<KernelTime>& kernels, double total_ms, size_t top);
nlohmann::json op_table_json(const OpTable& t);

// Chrome trace event format: one "X" event per step per run (ts/dur in microseconds; host steps laid
// back to back from the run's start since their profile holds durations, device steps at their offsets
// on the device's clock) inside one "X" event per run, a process per mode. args carry the kind, label,
// input/output types and source nodes and ops.
struct TraceProcess {
  std::string name;  // "kiln compiled"
  const std::vector<TimedRun>* runs;
};
nlohmann::json chrome_trace(const std::vector<TraceProcess>& processes);

}  // namespace kiln::report
