// Fuzz target: bytes -> the tuning store (autotune/tuning_store.h) and every reader of its rows, issue
// 20's "the tuning store's rows". Byte 0 picks the surface:
//   even: the rest is the store's file itself (garbage, a truncated or foreign SQLite database, ...);
//   odd:  the rest is rows: kiln's schema is set up, then `results` rows are written with raw SQL for the
//         GEMM key below and for the softmax router's calibration key, each field given as text, an
//         integer, a real or a blob (SQLite keeps whatever type it is given), and `attempts` rows too.
// Then the readers run: a lookup, the attempt markers, an autotune of three named choices that takes a
// stored winner (it must be one of them) with its timings JSON, the softmax calibration and the sweep's
// measurements, and a store on top. Findings: a crash or sanitizer report, an exception other than a
// user error, a stored winner that names no choice.
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/choice_helpers.h"
#include "autotune/softmax_calibration.h"
#include "autotune/tuning_store.h"
#include "fuzz_util.h"

namespace {

namespace fs = std::filesystem;
using namespace kiln;
using namespace kiln::autotune;

constexpr const char* kDevice = "fuzz-device";
// The GEMM key the rows are written under, the store is read with and the tune asks for.
constexpr const char* kOp = "MatMul(A[M,K],B[K,N])";
constexpr const char* kShape = "M=8,N=8,K=8";
constexpr const char* kLibraries = "fuzz 1";

TuneRequest gemm_request(int& prepared) {
  TuneRequest r;
  r.op_signature = kOp;
  r.shape_key = kShape;
  r.dtype = "f32";
  r.device_key = kDevice;
  r.library_versions = kLibraries;
  r.settings_key = "";
  for (const char* name : {"onednn", "template:a", "template:b"})
    r.choices.push_back(make_choice({name, [&prepared] { ++prepared; }, [] {}, [](std::string&) { return true; }}));
  return r;
}

// Splits the input into fields at 0xff bytes.
std::vector<std::string> fields_of(const uint8_t* data, size_t size) {
  std::vector<std::string> fields(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0xff) fields.emplace_back();
    else fields.back().push_back(static_cast<char>(data[i]));
  }
  return fields;
}

// Binds `field` as the type its first byte names: i(nteger), r(eal), b(lob), n(ull), else text (the
// byte itself is dropped).
void bind_field(sqlite3_stmt* s, int index, const std::string& field) {
  const char type = field.empty() ? 't' : field[0];
  const std::string rest = field.empty() ? "" : field.substr(1);
  switch (type) {
    case 'i': sqlite3_bind_int64(s, index, static_cast<int64_t>(std::strtoll(rest.c_str(), nullptr, 10))); break;
    case 'r': sqlite3_bind_double(s, index, std::strtod(rest.c_str(), nullptr)); break;
    case 'b': sqlite3_bind_blob(s, index, rest.data(), static_cast<int>(rest.size()), SQLITE_TRANSIENT); break;
    case 'n': sqlite3_bind_null(s, index); break;
    default: sqlite3_bind_text(s, index, rest.data(), static_cast<int>(rest.size()), SQLITE_TRANSIENT); break;
  }
}

// Writes rows of the given fields into `file` (which has kiln's schema). Constraint failures are fine:
// the row is not written.
void write_rows(const fs::path& file, const std::vector<std::string>& fields) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return;
  }
  const std::string version = KILN_VERSION;
  const char* results =
      "INSERT OR REPLACE INTO results(op_signature, shape_key, dtype, device_key, library_versions, settings_key, "
      "kiln_version, winner, quality, timings, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
  const char* attempts =
      "INSERT OR REPLACE INTO attempts(op_signature, shape_key, dtype, device_key, library_versions, settings_key, "
      "kiln_version, choice, pid, host, started) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
  // Three rows of four fields: the GEMM's result, the calibration's result, the GEMM's attempt marker.
  for (int row = 0; row < 3; ++row) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, row == 2 ? attempts : results, -1, &s, nullptr) != SQLITE_OK) break;
    const bool calibration = row == 1;
    const char* key[] = {calibration ? "softmax_routing" : kOp, calibration ? "thresholds by row width" : kShape,
                         "f32", kDevice, calibration ? "" : kLibraries, "", version.c_str()};
    for (int i = 0; i < 7; ++i) sqlite3_bind_text(s, i + 1, key[i], -1, SQLITE_TRANSIENT);
    for (int i = 0; i < 4; ++i) {
      const size_t f = static_cast<size_t>(row * 4 + i);
      bind_field(s, 8 + i, f < fields.size() ? fields[f] : std::string("i1"));
    }
    (void)sqlite3_step(s);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
}

void read_everything(const fs::path& file) {
  const auto quiet = [](const std::string&) {};
  {
    TuningStore store(file, quiet);
    TuningKey key;
    key.op_signature = kOp;
    key.shape_key = kShape;
    key.dtype = "f32";
    key.device_key = kDevice;
    key.library_versions = kLibraries;
    if (auto r = store.lookup(key, 1)) (void)timings_from_json(r->timings_json);
    (void)store.attempts(key);
  }
  Options o = fuzz::small_options();
  o.require_cached = true;  // a miss takes the default: nothing is benchmarked
  int prepared = 0;
  {
    Autotuner tuner(o, file, quiet);
    TuneRequest request = gemm_request(prepared);
    TuneResult result = tuner.tune(request);
    if (result.winner_index >= request.choices.size() || request.choices[result.winner_index]->name() != result.winner)
      fuzz::fail("the tuner's winner is not one of the choices", result.winner);
    (void)tuner.summary_text();
  }
  std::string why;
  (void)load_softmax_calibration(file, kDevice, &why);
  (void)load_softmax_measurements(file, kDevice);
  {
    TuningStore store(file, quiet);
    TuningKey key;
    key.op_signature = "fuzz";
    (void)store.store(key, TuningRecord{"w", "[]", 1, 0});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const fs::path dir = fuzz::scratch_dir("tuning_store");
  const fs::path file = dir / kTuningStoreFileName;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(dir / (kTuningStoreFileName + std::string(suffix)));
  if (data[0] % 2 == 0) {
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  } else {
    {  // kiln's schema, made by kiln
      TuningStore store(file, [](const std::string&) {});
      TuningKey key;
      key.op_signature = "schema";
      store.store(key, TuningRecord{"w", "[]", 1, 0});
    }
    write_rows(file, fields_of(data + 1, size - 1));
  }
  fuzz::guarded([&] { read_everything(file); });
  return 0;
}
