// Accuracy of a run's outputs against a reference's, by PyTorch's benchmark runner's rule
// (runtime/compare.h), over all outputs at once. The fp64 oracle is asked for only when some output
// misses allclose, since running the reference mode costs far more than the model itself.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "kiln/tensor.h"

namespace kiln::report {

using Outputs = std::map<std::string, Tensor>;

struct OutputsAccuracy {
  bool pass = false;
  std::string rule;    // "allclose" when every output passed it, "rmse" when one needed the oracle;
                       // on failure the rule of the first failing output ("rmse", "nan", "shape", "missing")
  std::string detail;  // per output: "name: rule, detail"
  bool used_oracle = false;
};

OutputsAccuracy compare_outputs(const Outputs& result, const Outputs& reference,
                                const std::function<const Outputs&()>& fp64_oracle, double tol = 1e-4,
                                double multiplier = 2.0);

// A run in bf16 / fp16 against fp32 outputs: the low-precision rule (runtime/compare.h) on every output;
// rule "low-precision", or the first failing output's.
OutputsAccuracy compare_low_precision(const Outputs& result, const Outputs& reference);

}  // namespace kiln::report
