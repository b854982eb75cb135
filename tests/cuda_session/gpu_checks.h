// What the GPU session tests share: the comparison of a GPU output with the CPU's (fp32 within an
// unfused run's accuracy, bf16 / fp16 by the low-precision rule) and weights made constants.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "kiln/graph.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace kiln::gpu_checks {

inline void expect_matches_cpu(const Tensor& got, const Tensor& want, const std::string& precision,
                               const std::string& what) {
  if (precision == "fp32") {
    const CloseResult r = all_close(got, want, 1e-4, 1e-5);
    EXPECT_TRUE(r.ok) << what << ": " << r.reason << " (max abs err " << r.max_abs_err << ")";
  } else {
    const LowPrecisionResult r = low_precision_rule(got, want);
    EXPECT_TRUE(r.pass) << what << ": " << r.detail;
  }
}

// The graph with its weight inputs (names starting with w or b) made constants of random values
// scaled by 1/sqrt(fan_in), as a model's initializers.
inline Graph with_constant_weights(Graph g, int64_t fan_in) {
  const std::map<std::string, Tensor> values = make_inputs(g, {}, 11);
  std::vector<ValueId> inputs;
  for (ValueId id : g.inputs) {
    const std::string& name = g.value(id).name;
    if (name[0] != 'w' && name[0] != 'b') {
      inputs.push_back(id);
      continue;
    }
    Tensor t = values.at(name).clone();
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] /= std::sqrt(float(fan_in));
    g.value(id).constant = std::make_shared<const Tensor>(std::move(t));
  }
  g.inputs = inputs;
  return g;
}

}  // namespace kiln::gpu_checks
