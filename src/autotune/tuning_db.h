// kiln's tuning database: measured settings per device, one JSON file next to the kernel cache
// (<cache_dir>/tuning.json, mode 0600 in the 0700 cache folder). Today it holds the softmax routing
// thresholds that `kiln sweep softmax --store` measures and the router reads (softmax_route.h).
//
// Format: {"format": "kiln-tuning", "version": 1, "devices": {DEVICE_KEY: {"softmax": {
//   "max_fused_width": N, "library_min_width": N or null (never), "library_max_width": N (0: none; absent
//   in files written before it existed), "measured": {...}}}}}
// Reading never fails: a missing, unreadable, corrupt or foreign file (another format, another
// version, wrong field types) gives nullopt and the caller keeps its defaults. Writing is
// read-modify-write under an exclusive flock on <file>.lock, then a private temp file renamed over
// the database, so concurrent writers lose no device's entry and readers never see half a file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kiln::autotune {

inline constexpr const char* kTuningFileName = "tuning.json";

struct SoftmaxCalibration {
  int64_t max_fused_width = 0;    // per-row fused kernel up to this width
  int64_t library_min_width = 0;  // library from this width; INT64_MAX: never
  int64_t library_max_width = 0;  // library for rows up to this width (short rows); 0: none
};

// The calibration stored for `device_key`, or nullopt (none, or an unusable file; `why`, if given,
// says which).
std::optional<SoftmaxCalibration> load_softmax_calibration(const std::filesystem::path& db,
                                                           const std::string& device_key,
                                                           std::string* why = nullptr);

// The sweep stored with this device's calibration (what `kiln sweep softmax --json` writes), or
// nullopt when there is none or the calibration itself is unusable.
std::optional<nlohmann::json> load_softmax_measurements(const std::filesystem::path& db, const std::string& device_key);

// Stores (replaces) the calibration of `device_key`, with `measured` (the sweep's records) beside it.
// Creates the folder (0700) and the file (0600); a corrupt or foreign file is replaced. I/O failures
// are user errors naming the file.
void store_softmax_calibration(const std::filesystem::path& db, const std::string& device_key,
                               const SoftmaxCalibration& calibration, const nlohmann::json& measured = {});

}  // namespace kiln::autotune
