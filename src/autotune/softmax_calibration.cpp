#include "autotune/softmax_calibration.h"

#include <limits>

#include "autotune/tuning_store.h"
#include "support/error.h"

namespace kiln::autotune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TuningKey calibration_key(const std::string& device_key) {
  TuningKey key;
  key.op_signature = "softmax_routing";
  key.shape_key = "thresholds by row width";
  key.dtype = "f32";
  key.device_key = device_key;
  return key;
}

// The record's JSON if the store has one for this device, else nullopt and `why`.
std::optional<json> stored_record(const fs::path& db, const std::string& device_key, std::string& why) {
  std::error_code ec;
  if (!fs::exists(db, ec)) {
    why = "no tuning store";
    return std::nullopt;
  }
  std::string warning;
  TuningStore store(db, [&](const std::string& line) { warning = line; });
  std::optional<TuningRecord> record = store.lookup(calibration_key(device_key));
  if (!record) {
    why = !store.unusable_reason().empty() ? store.unusable_reason()
          : !warning.empty()                ? warning
                                            : "no calibration for this device";
    return std::nullopt;
  }
  json j = json::parse(record->timings_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    why = "malformed softmax calibration (not a JSON object)";
    return std::nullopt;
  }
  return j;
}

std::optional<SoftmaxCalibration> calibration_of(const json& s, std::string& why) {
  const json& fused = s.value("max_fused_width", json());
  const json& lib = s.value("library_min_width", json());
  const json& short_lib = s.value("library_max_width", json());
  if (!fused.is_number_integer() || fused.get<int64_t>() < 0 || !(lib.is_null() || lib.is_number_integer()) ||
      (lib.is_number_integer() && lib.get<int64_t>() < 1) || !short_lib.is_number_integer() ||
      short_lib.get<int64_t>() < 0) {
    why = "malformed softmax calibration";
    return std::nullopt;
  }
  SoftmaxCalibration c;
  c.max_fused_width = fused.get<int64_t>();
  c.library_min_width = lib.is_null() ? std::numeric_limits<int64_t>::max() : lib.get<int64_t>();
  c.library_max_width = short_lib.get<int64_t>();
  return c;
}

}  // namespace

std::optional<SoftmaxCalibration> load_softmax_calibration(const fs::path& db, const std::string& device_key,
                                                           std::string* why) {
  std::string reason;
  std::optional<SoftmaxCalibration> result;
  if (auto j = stored_record(db, device_key, reason)) result = calibration_of(*j, reason);
  if (why) *why = result ? std::string() : reason;
  return result;
}

std::optional<json> load_softmax_measurements(const fs::path& db, const std::string& device_key) {
  std::string reason;
  auto j = stored_record(db, device_key, reason);
  if (!j || !calibration_of(*j, reason)) return std::nullopt;  // only beside a usable calibration
  const json& m = j->value("measured", json());
  if (!m.is_object()) return std::nullopt;
  return m;
}

void store_softmax_calibration(const fs::path& db, const std::string& device_key, const SoftmaxCalibration& c,
                               const json& measured) {
  KILN_INTERNAL_CHECK(c.max_fused_width >= 0 && c.library_min_width >= 1 && c.library_max_width >= 0,
                      "bad calibration {} {} {}", c.max_fused_width, c.library_min_width, c.library_max_width);
  const json record = {{"max_fused_width", c.max_fused_width},
                       {"library_min_width", c.library_min_width == std::numeric_limits<int64_t>::max()
                                                 ? json(nullptr)
                                                 : json(c.library_min_width)},
                       {"library_max_width", c.library_max_width},
                       {"measured", measured}};
  std::string warning;
  TuningStore store(db, [&](const std::string& line) { warning = line; });
  if (!store.store(calibration_key(device_key), TuningRecord{"thresholds", record.dump(), 1, 0}, /*replace_any=*/true))
    user_error("tuning store '{}': cannot store the softmax calibration: {}", db.string(),
               !store.unusable_reason().empty() ? store.unusable_reason() : warning);
}

}  // namespace kiln::autotune
