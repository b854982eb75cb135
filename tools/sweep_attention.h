// The masked attention rows of `kiln sweep softmax`: Softmax(scores * 0.125 + mask), scores
// [8, 12, S, S], mask [1, 1, S, S] (causal), on the fused and the library route.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "kiln/options.h"

namespace kiln::tools {

struct AttentionResult {
  int64_t seq = 0;
  double ms[2] = {};  // fused (one kernel with scale and mask), library (pointwise apart + oneDNN)
  bool library_chosen = false;  // what a compiled model runs under `options` (masked_softmax_library_fallback)
};

// Per S: each route's compile on `backend`, checked against fp64, its steps timed in interleaved
// rounds for `budget_ms` (median, or with `fastest` the minimum).
std::vector<AttentionResult> sweep_attention(const std::vector<int64_t>& seqs, double budget_ms, bool fastest,
                                             const backend::Backend& backend, const Options& options);

}  // namespace kiln::tools
