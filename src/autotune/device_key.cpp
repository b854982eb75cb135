// Device keys for the tuning database (see device_key.h).
#include "autotune/device_key.h"

#include <fmt/format.h>

#include <fstream>

namespace kiln::autotune {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string name = line.substr(colon + 1);
    auto first = name.find_first_not_of(" \t");
    auto last = name.find_last_not_of(" \t\r");
    if (first != std::string::npos) return name.substr(first, last - first + 1);
    break;
  }
  return "unknown cpu";
}

std::string device_key(const std::string& cpu_model, const std::string& feature_tier, int threads) {
  return fmt::format("{} | {} | {} threads", cpu_model, feature_tier, threads);
}

}  // namespace kiln::autotune
