// The generic autotuner: given candidate implementations of one op at one shape (generated GEMM
// templates, oneDNN, ...), picks the fastest correct one and remembers it in the tuning store
// (tuning_store.h), so the next compile of the same op, shape and machine does no benchmarking.
//
// tune(request):
//   1. autotune=off: the default candidate (choices[0]; the next one if its prepare() throws), no
//      benchmark, the database neither read nor written (so off is reproducible).
//   2. A stored winner for the key (op signature, shape key, dtype, device key, library versions,
//      settings key, kiln version), measured at least as thoroughly as the current mode (max > fast)
//      and among the offered choices: that one, no benchmark (from_db).
//   3. (require_cached: no budget at all, and no warning about it.) Budget (autotune_budget_s, for everything one Autotuner tunes, preparing and checking
//      included) spent: the default candidate, no benchmark, said once as a warning and in the
//      summary per op. A tune that starts within the budget finishes (after limits.min_rounds once
//      the budget runs out on the way).
//   4. Otherwise every choice is prepared (one that throws is dropped with a warning naming it),
//      checked against the reference (a wrong one is dropped with a warning and never wins), warmed
//      up and timed: rounds that interleave the choices (so drift hits them alike), each round one
//      batch per choice sized so that a choice gets about limits.target_s_per_choice in all; the
//      median of the per-call times decides (within limits.tie_margin: the earlier choice). A choice
//      whose fastest batch is more than limits.prune_factor times the best median after
//      limits.min_rounds stops being timed.
//      The winner and every candidate's numbers are stored.
// The winner returned is always prepared; the caller uses request.choices[result.winner_index].
// No usable choice at all (every one dropped) is an error: a UserError if every failure was one,
// else an InternalError, listing each candidate's failure.
//
// Crash and hang protection (choice_guard.h): calls into candidates run under a guard that names
// the candidate when the process dies of a fatal signal, and aborts (naming it) when one call takes
// longer than hang_timeout_s. Before a candidate is prepared and checked, an attempt marker goes into
// the database and is removed once check returns; the watchdog also leaves one before aborting. A
// later tune of the same key finds the marker of a dead process (same host) and skips that candidate
// with a warning instead of crashing again (delete the database to retry it). Not covered across
// runs: a crash during timing (after the check passed) and a crash preparing a stored winner; those
// still name the candidate as they die.
//
// Progress: a line on stderr, rewritten in place, while stderr is a terminal; nothing otherwise.
// tune() calls from several threads run one at a time (timings taken side by side would be worthless);
// a choice must not call tune() itself.
//
// Use (one Autotuner per model compile; its budget covers all of that model's tunes):
//   autotune::Autotuner tuner(options, codegen::cpu::resolve_cache_dir(options) / autotune::kTuningStoreFileName);
//   autotune::TuneRequest req{.op_signature = "MatMul(A[M,K],B[K,N])+bias", .shape_key = "M=128,K=768,N=768",
//                             .dtype = "f32", .device_key = backend.device_key(options),
//                             .library_versions = "onednn 2.6.3", .settings_key = autotune::gemm_settings_key(options)};
//   req.choices.push_back(make_choice({...}));  // choice_helpers.h, or a Choice subclass; [0] = default
//   autotune::TuneResult r = tuner.tune(req);
//   std::unique_ptr<Choice> use = std::move(req.choices[r.winner_index]);  // prepared
//   ... at the end: fputs(tuner.summary_text().c_str(), stderr) or tuner.summary_json().
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autotune/tuning_store.h"
#include "kiln/options.h"

namespace kiln::autotune {

// One candidate implementation of an op, set up on the op's benchmark inputs by the caller.
class Choice {
 public:
  virtual ~Choice() = default;
  // Stable across runs and unique within a request, e.g. "template:mr6_nr64_kc256" or "onednn".
  virtual std::string name() const = 0;
  // Compile / build / create primitives. May throw (UserError, InternalError, ...): the choice is dropped.
  virtual void prepare() = 0;
  // One execution on the benchmark inputs. May throw: the choice is dropped.
  virtual void run() = 0;
  // Runs once and compares the output with the reference; false (and `why`: how far off) if wrong.
  virtual bool check(std::string& why) = 0;
};

enum class TuneMode { off, fast, max };
// options.autotune as a mode; another value is a user error.
TuneMode autotune_mode(const Options& options);
const char* mode_name(TuneMode mode);
// options.gemm_backends as a list (template, onednn, blas; at least one, none twice); else a user error.
std::vector<std::string> gemm_backends(const Options& options);

// The settings part of a GEMM tuning key: the candidate families offered (a stored winner chosen
// among fewer families must not hide a newly enabled one) and every setting that changes generated
// code (Options::code_key). Threads are part of the device key.
std::string gemm_settings_key(const Options& options);

struct TuneRequest {
  std::string op_signature;      // what the op is, e.g. "MatMul(A[M,K],B[K,N])+bias+gelu"
  std::string shape_key;         // its sizes, e.g. "M=128,K=768,N=3072"
  std::string dtype;             // "f32"
  std::string device_key;        // device_key.h (e.g. a Backend's device_key(options))
  std::string library_versions;  // e.g. "onednn 2.6.3"
  std::string settings_key;      // settings that change what the choices do (e.g. gemm_backends, threads)
  std::vector<std::unique_ptr<Choice>> choices;  // choices[0] is the default
};

enum class CandidateStatus { timed, pruned, wrong, failed, quarantined, untried };
const char* status_name(CandidateStatus status);

struct CandidateTiming {
  std::string name;
  CandidateStatus status = CandidateStatus::untried;
  std::string note;               // why it was dropped / pruned
  double median_us = 0;           // per call; 0 when not timed
  double min_us = 0;
  int samples = 0;                // timed batches
  int64_t calls = 0;              // timed run() calls (warm-up not counted)
};

enum class TuneSource { benchmark, database, default_off, default_budget };
const char* source_name(TuneSource source);  // for people: "default (budget spent)"
const char* source_key(TuneSource source);   // for JSON: "default_budget"

struct TuneResult {
  std::string op_signature, shape_key, dtype;
  std::string winner;
  size_t winner_index = 0;  // into request.choices
  TuneSource source = TuneSource::benchmark;
  bool from_db() const { return source == TuneSource::database; }
  std::vector<CandidateTiming> table;  // every candidate (from the database on a hit)
  std::vector<std::string> warnings;   // also sent to the warning sink
  double seconds = 0;                  // time this tune took
};

// How long to measure; the defaults of each mode come from limits_for().
struct TuneLimits {
  double target_s_per_choice = 0.01;  // timed work per choice
  double warmup_s = 0.001;            // untimed runs after check, also the first estimate
  int min_rounds = 3;
  int max_rounds = 15;  // many small batches: a preempted batch moves the median little
  double prune_factor = 3.0;
  // A later choice beats an earlier one only when its median is lower by more than this fraction:
  // within the noise the earlier (closer to the default) one stays, so reruns do not flip-flop.
  double tie_margin = 0.02;
};
TuneLimits limits_for(TuneMode mode);

class Autotuner {
 public:
  // Reads autotune, autotune_budget_s (user errors for bad values). `db_file`: the tuning store,
  // normally resolve_cache_dir(options) / kTuningStoreFileName; empty: nothing is stored or read.
  Autotuner(const Options& options, std::filesystem::path db_file, WarnSink warn = warn_to_stderr);
  ~Autotuner();

  TuneResult tune(TuneRequest& request);

  // Tunes that benchmarked (neither database nor default).
  int benchmarks_run() const { return benchmarks_run_; }
  int database_hits() const { return database_hits_; }
  double budget_spent_s() const { return spent_s_; }
  TuneMode mode() const { return mode_; }

  // Every tune so far, as a table for the CLI ("op, candidates, median us, winner") and as JSON.
  const std::vector<TuneResult>& results() const { return results_; }
  std::string summary_text() const;
  nlohmann::json summary_json() const;

  // For tests and callers with special needs.
  void set_limits(const TuneLimits& limits) { limits_ = limits; }
  void set_hang_timeout_s(double seconds) { hang_timeout_s_ = seconds; }
  void set_progress_stream(std::FILE* stream) { progress_ = stream; }  // nullptr: quiet
  // false: stored results are not used (every tune benchmarks, within the budget) but still replaced,
  // for a "tune again" command.
  void set_use_stored(bool use) { use_stored_ = use; }

 private:
  TuneResult take_default(TuneRequest& request, TuneSource source);
  bool try_stored(TuneRequest& request, const TuningKey& key, TuneResult& result);
  void benchmark(TuneRequest& request, const TuningKey& key, TuneResult& result);
  void warn(TuneResult& result, const std::string& line);
  void progress(const std::string& line);

  TuneMode mode_;
  double budget_s_;
  double spent_s_ = 0;
  TuneLimits limits_;
  double hang_timeout_s_ = 300;
  std::FILE* progress_ = nullptr;
  WarnSink warn_;
  std::unique_ptr<TuningStore> store_;
  bool budget_warned_ = false;
  bool use_stored_ = true;
  int benchmarks_run_ = 0;
  int database_hits_ = 0;
  std::vector<TuneResult> results_;
};

// The timings table as stored in the database (and its reverse; a malformed text gives an empty table).
std::string timings_to_json(const std::vector<CandidateTiming>& table);
std::vector<CandidateTiming> timings_from_json(const std::string& text);

}  // namespace kiln::autotune
