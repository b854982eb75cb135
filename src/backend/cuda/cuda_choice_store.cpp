// Measured device choices in the tuning store (cuda_choice_store.h).
#include "backend/cuda/cuda_choice_store.h"

#include <fmt/format.h>

#include <charconv>

#include "codegen/cpu/kernel_cache.h"
#include "kiln_git.h"

namespace kiln::backend::cuda {

ChoiceStore::ChoiceStore(const Options& options, const DeviceInfo& device, int driver_version,
                         std::string library_versions)
    : ChoiceStore(codegen::cpu::resolve_cache_dir(options) / autotune::kTuningStoreFileName, device, driver_version,
                  std::move(library_versions), autotune::warn_to_stderr) {}

ChoiceStore::ChoiceStore(std::filesystem::path file, const DeviceInfo& device, int driver_version,
                         std::string library_versions, autotune::WarnSink warn)
    : store_(std::make_unique<autotune::TuningStore>(std::move(file), std::move(warn))),
      device_key_(fmt::format("{} | {} | {} SMs | driver {}", device.name, device.arch(), device.sm_count, driver_version)),
      library_versions_(std::move(library_versions)) {}

autotune::TuningKey ChoiceStore::key_of(const std::string& key) const {
  autotune::TuningKey k;
  k.op_signature = "cuda measured choice";
  k.shape_key = key;
  k.device_key = device_key_;
  k.library_versions = library_versions_;
  k.kiln_version = fmt::format("{} {}", KILN_VERSION, KILN_GIT_COMMIT);
  return k;
}

std::optional<int> ChoiceStore::lookup(const std::string& key) {
  const std::optional<autotune::TuningRecord> r = store_->lookup(key_of(key));
  if (!r) return std::nullopt;
  int choice = 0;
  const char* end = r->winner.data() + r->winner.size();
  const auto [ptr, ec] = std::from_chars(r->winner.data(), end, choice);
  if (ec != std::errc() || ptr != end) return std::nullopt;  // not ours: measured again, then replaced
  return choice;
}

void ChoiceStore::store(const std::string& key, int choice) {
  autotune::TuningRecord r;
  r.winner = std::to_string(choice);
  r.timings_json = "{}";
  store_->store(key_of(key), r, /*replace_any=*/true);
}

}  // namespace kiln::backend::cuda
