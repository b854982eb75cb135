// Summaries of repeated timings: the median and the 10th/90th percentiles of a sample.
#pragma once
#include <vector>

namespace kiln::report {

struct Summary {
  int n = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
};

// Percentile q in [0, 1] by linear interpolation between order statistics (NumPy's default), so that
// the median of an even sample is the mean of the middle two. An empty sample gives 0.
double percentile(std::vector<double> sample, double q);
Summary summarize(const std::vector<double>& sample_ms);

}  // namespace kiln::report
