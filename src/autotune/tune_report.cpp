// The autotuner's reports: the summary table for the CLI (text and JSON) and the timings stored per
// key in the tuning database.
#include <fmt/format.h>

#include "autotune/autotuner.h"

namespace kiln::autotune {
namespace {

using nlohmann::json;

json timing_json(const CandidateTiming& t) {
  json j = {{"name", t.name}, {"status", status_name(t.status)}};
  if (t.samples > 0) {
    j["median_us"] = t.median_us;
    j["min_us"] = t.min_us;
    j["samples"] = t.samples;
    j["calls"] = t.calls;
  }
  if (!t.note.empty()) j["note"] = t.note;
  return j;
}

std::string us_text(const CandidateTiming& t, double value) {
  return t.samples > 0 ? fmt::format("{:.2f}", value) : std::string("-");
}

}  // namespace

const char* status_name(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::timed: return "timed";
    case CandidateStatus::pruned: return "pruned";
    case CandidateStatus::wrong: return "wrong";
    case CandidateStatus::failed: return "failed";
    case CandidateStatus::quarantined: return "quarantined";
    case CandidateStatus::untried: return "untried";
  }
  return "?";
}

const char* source_name(TuneSource source) {
  switch (source) {
    case TuneSource::benchmark: return "benchmarked";
    case TuneSource::database: return "database";
    case TuneSource::default_off: return "default (autotune=off)";
    case TuneSource::default_budget: return "default (budget spent)";
  }
  return "?";
}

const char* source_key(TuneSource source) {
  switch (source) {
    case TuneSource::benchmark: return "benchmark";
    case TuneSource::database: return "database";
    case TuneSource::default_off: return "default_off";
    case TuneSource::default_budget: return "default_budget";
  }
  return "?";
}

std::string timings_to_json(const std::vector<CandidateTiming>& table) {
  json j = json::array();
  for (const CandidateTiming& t : table) j.push_back(timing_json(t));
  return j.dump();
}

std::vector<CandidateTiming> timings_from_json(const std::string& text) {
  std::vector<CandidateTiming> table;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return table;
  for (const json& e : j) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) return {};
    CandidateTiming t;
    t.name = e["name"].get<std::string>();
    // A field of another type (a damaged store) reads as absent, never as a json::type_error.
    const std::string status = e.contains("status") && e["status"].is_string() ? e["status"].get<std::string>() : "";
    for (CandidateStatus s : {CandidateStatus::timed, CandidateStatus::pruned, CandidateStatus::wrong,
                              CandidateStatus::failed, CandidateStatus::quarantined})
      if (status == status_name(s)) t.status = s;
    auto number = [&](const char* field) {
      return e.contains(field) && e[field].is_number() ? e[field].get<double>() : 0.0;
    };
    t.median_us = number("median_us");
    t.min_us = number("min_us");
    // Counts: whole numbers in range only (converting 1e21 or NaN to an integer is undefined), else 0.
    auto count = [&](const char* field, double most) {
      const double x = number(field);
      return x >= 0 && x <= most ? x : 0.0;
    };
    t.samples = static_cast<int>(count("samples", 2147483647.0));
    t.calls = static_cast<int64_t>(count("calls", 9.2e18));
    if (e.contains("note") && e["note"].is_string()) t.note = e["note"].get<std::string>();
    table.push_back(std::move(t));
  }
  return table;
}

std::string Autotuner::summary_text() const {
  int defaults = static_cast<int>(results_.size()) - benchmarks_run_ - database_hits_;
  std::string out = fmt::format(
      "autotune ({}): {} op(s): {} benchmarked, {} from the database, {} default; {:.2f} s of the {} s budget\n",
      mode_name(mode_), results_.size(), benchmarks_run_, database_hits_, defaults, spent_s_, budget_s_);
  for (const TuneResult& r : results_) {
    out += fmt::format("{} [{}] {}: {} ({})\n", r.op_signature, r.shape_key, r.dtype, r.winner, source_name(r.source));
    if (r.source != TuneSource::benchmark && r.source != TuneSource::database) continue;
    out += fmt::format("    {:<40} {:>12} {:>12} {:>9}  {}\n", "candidate", "median us", "min us", "calls", "status");
    for (const CandidateTiming& t : r.table) {
      std::string status = status_name(t.status);
      if (!t.note.empty()) status += ": " + t.note;
      out += fmt::format("  {} {:<40} {:>12} {:>12} {:>9}  {}\n", t.name == r.winner ? '*' : ' ', t.name,
                         us_text(t, t.median_us), us_text(t, t.min_us), t.calls, status);
    }
  }
  return out;
}

json Autotuner::summary_json() const {
  json ops = json::array();
  for (const TuneResult& r : results_) {
    json candidates = json::array();
    for (const CandidateTiming& t : r.table) candidates.push_back(timing_json(t));
    ops.push_back({{"op", r.op_signature},
                   {"shape", r.shape_key},
                   {"dtype", r.dtype},
                   {"winner", r.winner},
                   {"source", source_key(r.source)},
                   {"seconds", r.seconds},
                   {"candidates", std::move(candidates)},
                   {"warnings", r.warnings}});
  }
  return {{"mode", mode_name(mode_)},
          {"budget_s", budget_s_},
          {"spent_s", spent_s_},
          {"benchmarks_run", benchmarks_run_},
          {"database_hits", database_hits_},
          {"ops", std::move(ops)}};
}

}  // namespace kiln::autotune
