#include "report/stats.h"

#include <algorithm>
#include <cmath>

namespace kiln::report {

double percentile(std::vector<double> sample, double q) {
  if (sample.empty()) return 0;
  std::sort(sample.begin(), sample.end());
  double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sample.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sample.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sample[lo] + frac * (sample[hi] - sample[lo]);
}

Summary summarize(const std::vector<double>& sample_ms) {
  Summary s;
  s.n = static_cast<int>(sample_ms.size());
  if (sample_ms.empty()) return s;
  s.median = percentile(sample_ms, 0.5);
  s.p10 = percentile(sample_ms, 0.1);
  s.p90 = percentile(sample_ms, 0.9);
  s.min = *std::min_element(sample_ms.begin(), sample_ms.end());
  s.max = *std::max_element(sample_ms.begin(), sample_ms.end());
  return s;
}

}  // namespace kiln::report
