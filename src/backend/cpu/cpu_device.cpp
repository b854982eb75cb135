#include "backend/cpu/cpu_device.h"

#include <fmt/format.h>
#include <omp.h>

#include "autotune/device_key.h"
#include "autotune/softmax_calibration.h"
#include "autotune/tuning_store.h"
#include "autotune/softmax_calibration.h"
#include "codegen/cpu/cpu_features.h"
#include "codegen/cpu/kernel_cache.h"
#include "support/error.h"

namespace kiln::backend::cpu {

using schedule::RoutingThresholds;

std::string device_key(const Options& options) {
  codegen::cpu::CpuFeatures f = codegen::cpu::detect_cpu_features();
  const char* tier = f.has_avx512_tier() ? "avx512" : f.has_avx2_tier() ? "avx2" : "baseline";
  int threads = options.threads > 0 ? static_cast<int>(options.threads) : omp_get_max_threads();
  return autotune::device_key(autotune::cpu_model_name(), tier, threads);
}

std::string tuning_db_path(const Options& options) {
  return (codegen::cpu::resolve_cache_dir(options) / autotune::kTuningStoreFileName).string();
}

RoutingThresholds routing_thresholds(const Options& options, std::string* why) {
  std::string reason;
  try {
    std::string db = tuning_db_path(options);
    if (auto c = autotune::load_softmax_calibration(db, device_key(options), &reason)) {
      if (why) why->clear();
      return RoutingThresholds{c->max_fused_width, c->library_min_width, "calibration " + db, c->library_max_width};
    }
    reason = fmt::format("{}: {}", db, reason);
  } catch (const UserError& e) {  // no cache folder to look in
    reason = e.what();
  }
  if (why) *why = reason;
  return schedule::default_routing_thresholds();
}

std::string explain_softmax_routes(const Graph& g, const Options& options) {
  schedule::RoutingPolicy p = schedule::routing_policy(options, routing_thresholds(options));
  return schedule::explain_routes(g, schedule::route_softmax_nodes(g, p), p);
}

}  // namespace kiln::backend::cpu
