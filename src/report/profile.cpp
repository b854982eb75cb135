#include "report/profile.h"

#include <algorithm>
#include <map>

namespace kiln::report {

std::vector<KernelTime> kernel_times(const std::vector<TimedRun>& runs) {
  std::vector<KernelTime> kernels;
  if (runs.empty()) return kernels;
  const auto& first = runs.front().profile.steps;
  for (size_t i = 0; i < first.size(); ++i) {
    const StepProfile& s = first[i];
    kernels.push_back({static_cast<int>(i), s.kind, s.label, s.output_type, s.source_nodes, s.source_ops,
                       s.input_types, 0.0});
  }
  for (const TimedRun& r : runs)  // every run executes the same plan
    for (size_t i = 0; i < std::min(kernels.size(), r.profile.steps.size()); ++i)
      kernels[i].mean_ms += r.profile.steps[i].ms / static_cast<double>(runs.size());
  return kernels;
}

double mean_total_ms(const std::vector<TimedRun>& runs) {
  double sum = 0;
  for (const TimedRun& r : runs) sum += r.profile.total_ms;
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

namespace {

// Adds each step's time to its source nodes' op types, split by the rule in profile.h.
void attribute(const std::vector<KernelTime>& kernels, const std::map<std::string, double>& eager_node_ms,
               std::map<std::string, OpRow>& rows, bool eager) {
  for (const KernelTime& k : kernels) {
    size_t n = k.source_nodes.size();
    if (n == 0) continue;
    std::vector<double> weight(n, 1.0);
    double sum = 0;
    bool all_known = true;
    for (size_t i = 0; i < n; ++i) {
      auto it = eager_node_ms.find(k.source_nodes[i]);
      if (it == eager_node_ms.end()) all_known = false;
      else weight[i] = it->second;
      sum += weight[i];
    }
    if (!all_known || sum <= 0) {
      std::fill(weight.begin(), weight.end(), 1.0);
      sum = static_cast<double>(n);
    }
    for (size_t i = 0; i < n; ++i) {
      OpRow& row = rows[k.source_ops[i]];
      row.op = k.source_ops[i];
      (eager ? row.eager_ms : row.compiled_ms) += k.mean_ms * weight[i] / sum;
      (eager ? row.eager_nodes : row.compiled_nodes) += 1;
    }
  }
}

}  // namespace

OpTable op_table(const std::vector<TimedRun>& eager, const std::vector<TimedRun>& compiled) {
  std::vector<KernelTime> ek = kernel_times(eager), ck = kernel_times(compiled);
  std::map<std::string, double> eager_node_ms;
  for (const KernelTime& k : ek)
    for (const std::string& node : k.source_nodes)
      eager_node_ms[node] += k.mean_ms / static_cast<double>(k.source_nodes.size());
  std::map<std::string, OpRow> rows;
  attribute(ek, {}, rows, true);  // eager steps are single nodes: their own time
  attribute(ck, eager_node_ms, rows, false);
  OpTable t;
  for (auto& [op, row] : rows) {
    t.rows.push_back(row);
    t.eager_table_ms += row.eager_ms;
    t.compiled_table_ms += row.compiled_ms;
  }
  std::sort(t.rows.begin(), t.rows.end(), [](const OpRow& a, const OpRow& b) {
    return a.compiled_ms != b.compiled_ms ? a.compiled_ms > b.compiled_ms : a.eager_ms > b.eager_ms;
  });
  t.eager_e2e_ms = mean_total_ms(eager);
  t.compiled_e2e_ms = mean_total_ms(compiled);
  return t;
}

nlohmann::json kernels_json(const std::vector<KernelTime>& kernels, double total_ms, size_t top) {
  std::vector<const KernelTime*> order;
  for (const KernelTime& k : kernels) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->mean_ms > b->mean_ms; });
  if (order.size() > top) order.resize(top);
  nlohmann::json out = nlohmann::json::array();
  for (const KernelTime* k : order)
    out.push_back({{"step", k->step}, {"kind", k->kind}, {"label", k->label}, {"ms", k->mean_ms},
                   {"share", total_ms > 0 ? k->mean_ms / total_ms : 0.0}, {"source_ops", k->source_ops},
                   {"source_nodes", k->source_nodes}, {"inputs", k->input_types}, {"output", k->output_type}});
  return out;
}

nlohmann::json op_table_json(const OpTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const OpRow& r : t.rows)
    rows.push_back({{"op", r.op}, {"eager_ms", r.eager_ms}, {"compiled_ms", r.compiled_ms},
                    {"eager_nodes", r.eager_nodes}, {"compiled_nodes", r.compiled_nodes}});
  return {{"rows", rows},
          {"rule", "a step's time is split over its source nodes in proportion to their eager times "
                   "(evenly when a node has no eager time)"},
          {"eager_table_ms", t.eager_table_ms}, {"compiled_table_ms", t.compiled_table_ms},
          {"eager_e2e_ms", t.eager_e2e_ms}, {"compiled_e2e_ms", t.compiled_e2e_ms},
          {"eager_coverage", t.eager_coverage()}, {"compiled_coverage", t.compiled_coverage()}};
}

nlohmann::json chrome_trace(const std::vector<TraceProcess>& processes) {
  nlohmann::json events = nlohmann::json::array();
  bool device_clock = false;
  for (size_t p = 0; p < processes.size(); ++p) {
    int pid = static_cast<int>(p) + 1;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1},
                      {"args", {{"name", processes[p].name}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "steps"}}}});
    const std::vector<TimedRun>& runs = *processes[p].runs;
    for (size_t r = 0; r < runs.size(); ++r) {
      double ts = runs[r].start_us;
      events.push_back({{"name", "run " + std::to_string(r)}, {"cat", "run"}, {"ph", "X"}, {"ts", ts},
                        {"dur", runs[r].profile.total_ms * 1000.0}, {"pid", pid}, {"tid", 1},
                        {"args", {{"run", r}, {"steps", runs[r].profile.steps.size()}}}});
      const auto& steps = runs[r].profile.steps;
      device_clock = device_clock || runs[r].profile.device_clock;
      for (size_t i = 0; i < steps.size(); ++i) {
        const StepProfile& s = steps[i];
        // A device's steps at their own offsets (its events are timestamps); the host's back to back.
        if (runs[r].profile.device_clock) ts = runs[r].start_us + s.start_ms * 1000.0;
        events.push_back({{"name", s.label}, {"cat", s.kind}, {"ph", "X"}, {"ts", ts}, {"dur", s.ms * 1000.0},
                          {"pid", pid}, {"tid", 1},
                          {"args", {{"run", r}, {"step", i}, {"kind", s.kind}, {"label", s.label},
                                    {"inputs", s.input_types}, {"output", s.output_type},
                                    {"source_nodes", s.source_nodes}, {"source_ops", s.source_ops}}}});
        ts += s.ms * 1000.0;
      }
    }
  }
  const char* note = device_clock
                         ? "device steps are placed at their device-clock offsets (events around each stream launch) "
                           "from their run's start, so gaps are the stream waiting on the host"
                         : "steps are laid back to back from their run's start (a profile holds durations); "
                           "the executor's time between steps shows at the end of each run";
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"},
          {"otherData", {{"producer", "kiln profile"}, {"note", note}}}};
}

}  // namespace kiln::report
