// The autotuner's decisions (see autotuner.h); measurement in bench_rounds.cpp, reports in tune_report.cpp.
#include "autotune/autotuner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "autotune/bench_rounds.h"
#include "autotune/choice_guard.h"
#include "support/error.h"

namespace kiln::autotune {
namespace {

using Clock = std::chrono::steady_clock;

int quality_of(TuneMode mode) { return mode == TuneMode::max ? 2 : 1; }

std::string describe(const TuneRequest& r, const std::string& choice) {
  return fmt::format("candidate '{}' of {} [{}] {}", choice, r.op_signature, r.shape_key, r.dtype);
}

// True if `pid` on this host is gone (a marker it left is then a crash or hang record).
bool process_is_gone(int64_t pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

TuningKey key_of(const TuneRequest& r) {
  TuningKey k;
  k.op_signature = r.op_signature;
  k.shape_key = r.shape_key;
  k.dtype = r.dtype;
  k.device_key = r.device_key;
  k.library_versions = r.library_versions;
  k.settings_key = r.settings_key;
  return k;
}

// Remembers how candidates failed, for the error when none is left.
struct Failures {
  std::vector<std::string> lines;
  bool all_user_errors = true;
  void add(const std::string& line, bool user) {
    lines.push_back(line);
    all_user_errors = all_user_errors && user;
  }
  [[noreturn]] void raise(const TuneRequest& r) const {
    std::string list;
    for (const std::string& l : lines) list += "\n  " + l;
    if (all_user_errors && !lines.empty())
      user_error("no candidate for {} [{}] {} works:{}", r.op_signature, r.shape_key, r.dtype, list);
    internal_error("autotune: no candidate for {} [{}] {} works:{}", r.op_signature, r.shape_key, r.dtype, list);
  }
};

// "2026-11-29 17:39:57 UTC"
std::string utc_text(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm {};
  if (!::gmtime_r(&t, &tm)) return std::to_string(unix_seconds);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

bool is_user_error(const std::exception& e) { return dynamic_cast<const UserError*>(&e) != nullptr; }

}  // namespace

TuneMode autotune_mode(const Options& options) {
  const std::string& m = options.autotune;
  if (m == "off") return TuneMode::off;
  if (m == "fast") return TuneMode::fast;
  if (m == "max") return TuneMode::max;
  user_error("setting autotune: '{}' is not one of off, fast, max", m);
}

const char* mode_name(TuneMode mode) {
  switch (mode) {
    case TuneMode::off: return "off";
    case TuneMode::fast: return "fast";
    case TuneMode::max: return "max";
  }
  return "?";
}

std::vector<std::string> gemm_backends(const Options& options) {
  std::vector<std::string> list;
  std::string_view rest = options.gemm_backends;
  while (true) {
    size_t comma = rest.find(',');
    std::string item(rest.substr(0, comma));
    if (item != "template" && item != "onednn" && item != "blas")
      user_error("setting gemm_backends: '{}' is not one of template, onednn, blas (in '{}')", item,
                 options.gemm_backends);
    for (const std::string& seen : list)
      if (seen == item) user_error("setting gemm_backends: '{}' is listed twice in '{}'", item, options.gemm_backends);
    list.push_back(std::move(item));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return list;
}

std::string gemm_settings_key(const Options& options) {
  std::string backends;
  for (const std::string& b : gemm_backends(options)) backends += (backends.empty() ? "" : ",") + b;
  return fmt::format("gemm_backends={};{}", backends, options.code_key());
}

TuneLimits limits_for(TuneMode mode) {
  TuneLimits l;
  if (mode == TuneMode::max) {
    l.target_s_per_choice = 0.25;
    l.warmup_s = 0.02;
    l.min_rounds = 7;
    l.max_rounds = 31;
    l.prune_factor = 5.0;  // max mode looks longer before giving up on a choice
    l.tie_margin = 0.01;   // and trusts smaller differences
  }
  return l;
}

Autotuner::Autotuner(const Options& options, std::filesystem::path db_file, WarnSink warn)
    : mode_(autotune_mode(options)),
      budget_s_(options.autotune_budget_s),
      limits_(limits_for(mode_)),
      progress_(::isatty(STDERR_FILENO) ? stderr : nullptr),
      warn_(warn ? std::move(warn) : WarnSink(warn_to_stderr)) {
  if (!std::isfinite(budget_s_) || budget_s_ < 0)
    user_error("setting autotune_budget_s: {} is not a number of seconds >= 0", budget_s_);
  if (options.require_cached) {  // nothing is benchmarked: a tune without a stored winner takes the default
    budget_s_ = 0;
    budget_warned_ = true;
  }
  if (!db_file.empty()) store_ = std::make_unique<TuningStore>(std::move(db_file), warn_);
}

Autotuner::~Autotuner() = default;

void Autotuner::warn(TuneResult& result, const std::string& line) {
  result.warnings.push_back(line);
  if (progress_) {  // the warning gets a line of its own, not the end of the progress line
    std::fputs("\r\x1b[K", progress_);
    std::fflush(progress_);
  }
  warn_(line);
}

void Autotuner::progress(const std::string& line) {
  if (!progress_) return;
  // Rewritten in place: carriage return, the line, clear to the end of the line.
  std::fprintf(progress_, "\r[autotune] op %zu: %.150s\x1b[K", results_.size() + 1, line.c_str());
  std::fflush(progress_);
}

TuneResult Autotuner::tune(TuneRequest& request) {
  const Clock::time_point start = Clock::now();
  KILN_INTERNAL_CHECK(!request.choices.empty(), "autotune: no choices for {} [{}]", request.op_signature,
                      request.shape_key);
  std::set<std::string> names;
  for (const auto& c : request.choices) {
    KILN_INTERNAL_CHECK(c != nullptr, "autotune: null choice for {}", request.op_signature);
    KILN_INTERNAL_CHECK(names.insert(c->name()).second, "autotune: two choices named '{}' for {}", c->name(),
                        request.op_signature);
  }

  TuneResult result;
  const TuningKey key = key_of(request);
  std::vector<std::string> stored_warnings;  // a stored winner that could not be used
  bool stored_hit = false;
  if (mode_ != TuneMode::off) {
    TuneResult stored;
    stored_hit = try_stored(request, key, stored);
    if (stored_hit) result = std::move(stored);
    else stored_warnings = std::move(stored.warnings);
  }
  if (mode_ == TuneMode::off) {
    result = take_default(request, TuneSource::default_off);
  } else if (stored_hit) {
    ++database_hits_;
  } else if (spent_s_ >= budget_s_) {
    result = take_default(request, TuneSource::default_budget);
    if (!budget_warned_) {
      budget_warned_ = true;
      warn(result, fmt::format("autotune budget of {} s spent: the ops left take their default candidate "
                               "(autotune_budget_s raises it)",
                               budget_s_));
    }
  } else {
    result.source = TuneSource::benchmark;
    ++benchmarks_run_;
    try {
      benchmark(request, key, result);
    } catch (...) {  // no usable choice: the time still counts against the budget
      spent_s_ += std::chrono::duration<double>(Clock::now() - start).count();
      if (progress_) std::fputs("\r\x1b[K", progress_);
      throw;
    }
    spent_s_ += std::chrono::duration<double>(Clock::now() - start).count();
  }
  result.warnings.insert(result.warnings.begin(), stored_warnings.begin(), stored_warnings.end());
  if (progress_) {
    std::fputs("\r\x1b[K", progress_);
    std::fflush(progress_);
  }
  result.op_signature = request.op_signature;
  result.shape_key = request.shape_key;
  result.dtype = request.dtype;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  results_.push_back(result);
  return result;
}

TuneResult Autotuner::take_default(TuneRequest& request, TuneSource source) {
  TuneResult result;
  result.source = source;
  Failures failures;
  ChoiceGuard guard(hang_timeout_s_, nullptr);
  for (size_t i = 0; i < request.choices.size(); ++i) {
    Choice& c = *request.choices[i];
    CandidateTiming t;
    t.name = c.name();
    if (result.winner.empty()) {
      try {
        ChoiceGuard::Call call(guard, t.name, describe(request, t.name) + " during prepare");
        c.prepare();
        result.winner = t.name;
        result.winner_index = i;
      } catch (const std::exception& e) {
        t.status = CandidateStatus::failed;
        t.note = fmt::format("prepare failed: {}", e.what());
        failures.add(fmt::format("{}: {}", t.name, t.note), is_user_error(e));
        warn(result, fmt::format("{} dropped: {}", describe(request, t.name), t.note));
      }
    }
    result.table.push_back(std::move(t));
  }
  if (result.winner.empty()) failures.raise(request);
  return result;
}

bool Autotuner::try_stored(TuneRequest& request, const TuningKey& key, TuneResult& result) {
  if (!store_ || !use_stored_) return false;
  std::optional<TuningRecord> record = store_->lookup(key, quality_of(mode_));
  if (!record) return false;
  size_t index = request.choices.size();
  for (size_t i = 0; i < request.choices.size(); ++i)
    if (request.choices[i]->name() == record->winner) index = i;
  if (index == request.choices.size()) return false;  // not offered now (other candidates): tune again
  try {
    ChoiceGuard guard(hang_timeout_s_, nullptr);
    ChoiceGuard::Call call(guard, record->winner, describe(request, record->winner) + " during prepare");
    request.choices[index]->prepare();
  } catch (const std::exception& e) {
    warn(result, fmt::format("{} (the stored winner) failed to prepare: {}; tuning again",
                             describe(request, record->winner), e.what()));
    return false;
  }
  result.source = TuneSource::database;
  result.winner = record->winner;
  result.winner_index = index;
  result.table = timings_from_json(record->timings_json);
  return true;
}

void Autotuner::benchmark(TuneRequest& request, const TuningKey& key, TuneResult& result) {
  const Clock::time_point start = Clock::now();
  const size_t n = request.choices.size();
  result.table.resize(n);
  for (size_t i = 0; i < n; ++i) result.table[i].name = request.choices[i]->name();

  // Candidates that took an earlier process down while being checked.
  if (store_) {
    const std::string host = this_host_name();
    for (const TuningAttempt& a : store_->attempts(key)) {
      if (a.host != host || !process_is_gone(a.pid)) continue;  // still running, or on another host
      for (CandidateTiming& t : result.table) {
        if (t.name != a.choice || t.status == CandidateStatus::quarantined) continue;
        t.status = CandidateStatus::quarantined;
        t.note = fmt::format("crashed or hung in process {} ({}); skipped until {} is deleted", a.pid,
                             utc_text(a.started_unix), store_->file().string());
        warn(result, fmt::format("{} skipped: {}", describe(request, t.name), t.note));
      }
    }
  }

  // The hook runs on the watchdog thread while the tuning thread hangs: its own connection.
  std::filesystem::path db = store_ ? store_->file() : std::filesystem::path();
  ChoiceGuard guard(hang_timeout_s_, [db, key](const std::string& choice) {
    if (db.empty()) return;
    TuningStore marker_store(db);
    marker_store.mark_attempt(key, choice);
  });

  Failures failures;
  std::vector<Contender> contenders;
  for (size_t i = 0; i < n; ++i) {
    Choice& c = *request.choices[i];
    CandidateTiming& t = result.table[i];
    if (t.status == CandidateStatus::quarantined) {
      failures.add(fmt::format("{}: {}", t.name, t.note), false);
      continue;
    }
    const std::string what = describe(request, t.name);
    progress(fmt::format("{} [{}]: checking {} ({}/{})", request.op_signature, request.shape_key, t.name, i + 1, n));
    if (store_) store_->mark_attempt(key, t.name);
    bool ok = false;
    std::string phase = "prepare";
    try {
      {
        ChoiceGuard::Call call(guard, t.name, what + " during prepare");
        c.prepare();
      }
      phase = "check";
      std::string why;
      ChoiceGuard::Call call(guard, t.name, what + " during check");
      ok = c.check(why);
      if (!ok) {
        t.status = CandidateStatus::wrong;
        t.note = fmt::format("wrong result: {}", why.empty() ? "differs from the reference" : why);
        failures.add(fmt::format("{}: {}", t.name, t.note), false);
        warn(result, fmt::format("{} dropped: {}", what, t.note));
      }
    } catch (const std::exception& e) {
      ok = false;
      t.status = CandidateStatus::failed;
      t.note = fmt::format("{} failed: {}", phase, e.what());
      failures.add(fmt::format("{}: {}", t.name, t.note), is_user_error(e));
      warn(result, fmt::format("{} dropped: {}", what, t.note));
    } catch (...) {
      ok = false;
      t.status = CandidateStatus::failed;
      t.note = fmt::format("{} failed: an exception that is not a std::exception", phase);
      failures.add(fmt::format("{}: {}", t.name, t.note), false);
      warn(result, fmt::format("{} dropped: {}", what, t.note));
    }
    if (store_) store_->clear_attempt(key, t.name);
    if (ok) contenders.push_back({&c, &t, what});
  }
  if (contenders.empty()) failures.raise(request);

  BenchHooks hooks;
  hooks.out_of_budget = [&] {
    return spent_s_ + std::chrono::duration<double>(Clock::now() - start).count() >= budget_s_;
  };
  hooks.progress = [&](const std::string& line) {
    progress(fmt::format("{} [{}]: {}", request.op_signature, request.shape_key, line));
  };
  for (const std::string& w : time_interleaved(contenders, limits_, guard, hooks)) warn(result, w);

  // The fastest median wins; within the tie margin the earlier choice (closer to the default).
  const CandidateTiming* best = nullptr;
  for (const Contender& c : contenders) {
    const CandidateTiming& t = *c.timing;
    if (t.status != CandidateStatus::timed && t.status != CandidateStatus::pruned) continue;
    if (t.samples == 0) continue;
    if (!best || t.median_us < best->median_us * (1 - limits_.tie_margin)) best = &t;
  }
  if (!best) {
    for (const Contender& c : contenders) failures.add(fmt::format("{}: {}", c.timing->name, c.timing->note), false);
    failures.raise(request);
  }
  result.winner = best->name;
  result.winner_index = static_cast<size_t>(best - result.table.data());
  if (store_) {
    TuningRecord record;
    record.winner = result.winner;
    record.timings_json = timings_to_json(result.table);
    record.quality = quality_of(mode_);
    store_->store(key, record, /*replace_any=*/!use_stored_);
  }
}

}  // namespace kiln::autotune
