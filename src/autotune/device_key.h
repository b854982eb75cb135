// The key a calibration is stored under: what makes timings of one machine differ from another's.
#pragma once
#include <string>

namespace kiln::autotune {

// "model name" of /proc/cpuinfo ("unknown cpu" when it cannot be read).
std::string cpu_model_name();

// "<cpu model> | <feature tier> | <threads> threads", e.g. "AMD EPYC 9B14 | avx512 | 2 threads".
std::string device_key(const std::string& cpu_model, const std::string& feature_tier, int threads);

}  // namespace kiln::autotune
