// The autotuner's results database: <cache_dir>/tuning.sqlite (file 0600 in a 0700 folder), SQLite
// through its C API: the one tuning store, for GEMM picks and the softmax router's calibrations
// (softmax_calibration.h).
//
// Tables: kiln_meta (format = "kiln-tuning", schema = 1), results (one row per tuned key: the winner,
// every candidate's timings as JSON, how thoroughly it was measured, when) and attempts (a candidate
// being checked right now, or one whose process died while checking it: see autotuner.h).
//
// Several processes may read and write at once: WAL journal, a busy timeout, and BEGIN IMMEDIATE
// transactions for every write, so no writer loses another's rows.
//
// Nothing here throws for a bad file. A file that is not ours (garbage, another SQLite database, a
// newer schema, a symlink, another user's) is reported once through the warning sink and then
// treated as empty: lookups miss, stores are skipped. It is never replaced: it may hold a newer kiln's
// results, and renaming a database other processes have open would break them. The warning says to
// delete it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::autotune {

inline constexpr const char* kTuningStoreFileName = "tuning.sqlite";
inline constexpr int kTuningStoreSchema = 1;

// Receives one warning line (without a trailing newline).
using WarnSink = std::function<void(const std::string&)>;
// Writes "[autotune] warning: <line>" to stderr.
void warn_to_stderr(const std::string& line);

// What a tuned result is filed under. Every field is part of the key.
struct TuningKey {
  std::string op_signature;      // the op and its form, e.g. "MatMul(A[M,K],B[K,N])+bias+gelu"
  std::string shape_key;         // the sizes, e.g. "M=128,K=768,N=3072"
  std::string dtype;             // "f32"
  std::string device_key;        // device_key.h
  std::string library_versions;  // e.g. "onednn 2.6.3"
  std::string settings_key;      // the settings that change what the candidates do
  std::string kiln_version = KILN_VERSION;
};

struct TuningRecord {
  std::string winner;        // the winning candidate's name()
  std::string timings_json;  // every candidate's measurements (autotuner.h writes and reads it)
  int quality = 1;           // 1: autotune=fast, 2: autotune=max; a lookup wants at least its own
  int64_t created_unix = 0;  // set by store() when 0
};

// A candidate marked "being checked" (see autotuner.h, crash protection).
struct TuningAttempt {
  std::string choice;
  int64_t pid = 0;
  std::string host;
  int64_t started_unix = 0;
};

class TuningStore {
 public:
  // Opens nothing yet: the file is created on the first write, read on the first lookup.
  explicit TuningStore(std::filesystem::path file, WarnSink warn = warn_to_stderr);
  ~TuningStore();
  TuningStore(const TuningStore&) = delete;
  TuningStore& operator=(const TuningStore&) = delete;

  const std::filesystem::path& file() const { return file_; }

  // The record for `key` measured at least as thoroughly as `min_quality`, or nullopt (none, or an
  // unusable file).
  std::optional<TuningRecord> lookup(const TuningKey& key, int min_quality = 1);
  // Stores `record` under `key` unless a more thorough one is there (`replace_any`: even then). False
  // if it could not be stored (warned once).
  bool store(const TuningKey& key, const TuningRecord& record, bool replace_any = false);

  // Attempt markers: mark before a candidate's first call, clear after it returned.
  bool mark_attempt(const TuningKey& key, const std::string& choice);
  void clear_attempt(const TuningKey& key, const std::string& choice);
  // Markers of `key` left by processes other than this one (dead ones and ones still running).
  std::vector<TuningAttempt> attempts(const TuningKey& key);

  // Why the file is unusable ("" while it is usable or not yet opened).
  const std::string& unusable_reason() const { return unusable_; }

 private:
  enum class Want { read, write };
  bool ensure_open(Want want);
  bool init_schema();
  bool check_identity(bool& fresh);
  void fail(const std::string& what);  // warns once and marks the store unusable
  void warn_once(const std::string& what);

  std::filesystem::path file_;
  WarnSink warn_;
  struct Connection;
  std::unique_ptr<Connection> conn_;
  std::string unusable_;
  bool warned_ = false;
};

// A consistent copy of the store file `from` written to `to` (which must not exist), for a saved model
// (SQLite's VACUUM INTO: other processes may be writing meanwhile). A user error if it cannot be made.
void snapshot_tuning_store(const std::filesystem::path& from, const std::filesystem::path& to);

// The name of this host (for attempt markers), "" if unknown.
std::string this_host_name();

}  // namespace kiln::autotune
