// The softmax router's calibration per device, in the one tuning store (tuning_store.h,
// <cache_dir>/tuning.sqlite) beside the autotuner's GEMM picks: what `kiln sweep softmax --store`
// measures and the CPU backend's router thresholds read. One record per device key (op signature
// "softmax_routing"), holding the thresholds and the sweep's measurements as JSON.
//
// Reading never fails: no store, an unusable one (not ours, another schema) or a malformed record
// gives nullopt and the caller keeps its defaults; `why` says which. The store's own locking (WAL,
// BEGIN IMMEDIATE) keeps concurrent writers from losing each other's devices.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kiln::autotune {

struct SoftmaxCalibration {
  int64_t max_fused_width = 0;    // per-row fused kernel up to this width
  int64_t library_min_width = 0;  // library from this width; INT64_MAX: never
  int64_t library_max_width = 0;  // library for rows up to this width (short rows); 0: none
};

// The calibration stored for `device_key` in the store file `db`, or nullopt (`why`, if given, says why).
std::optional<SoftmaxCalibration> load_softmax_calibration(const std::filesystem::path& db,
                                                           const std::string& device_key,
                                                           std::string* why = nullptr);

// The sweep stored with this device's calibration (what `kiln sweep softmax --json` writes), or
// nullopt when there is none or the calibration itself is unusable.
std::optional<nlohmann::json> load_softmax_measurements(const std::filesystem::path& db, const std::string& device_key);

// Stores (replaces) the calibration of `device_key`, with `measured` (the sweep's records) beside it.
// A store that cannot be written (a file that is not ours, a folder that cannot be made) is a user
// error naming the file and why.
void store_softmax_calibration(const std::filesystem::path& db, const std::string& device_key,
                               const SoftmaxCalibration& calibration, const nlohmann::json& measured = {});

}  // namespace kiln::autotune
