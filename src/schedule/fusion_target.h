// What the fusion passes are told from outside the graph. The compiler fills it once per compile from
// its backend: the softmax router's decision for every softmax-family node (made once, by the
// route_softmax pass, on the backend's thresholds) and which GEMM groups the backend will tune.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "loops/row_kernel.h"
#include "schedule/softmax_route.h"

namespace kiln::schedule {

struct LibraryGroup;

struct FusionTarget {
  std::vector<RoutedNode> routes;  // every Softmax / LogSoftmax node with its route, in node order
  // Softmax-family row kernels split their rows across threads from this width (split_min_width of the
  // router's thresholds).
  int64_t softmax_split_width = loops::kRowSplitMinCols;
  // Whether the backend tunes this MatMul / Gemm group's product, so that kiln's own GEMM code may run
  // it: such a group takes its pointwise tail, and a bare batched product becomes a group. Null: none.
  std::function<bool(const LibraryGroup&)> tunes_gemm;
  // Whether the backend folds the LayerNormalization in front of this MatMul group into its product (asked
  // with the LayerNorm joined: norm, norm_scale, norm_output set). Null: never.
  std::function<bool(const LibraryGroup&)> folds_layer_norm;
};

// The target for `g` under `policy` (the router runs here, once) and a backend's GEMM and LayerNorm rules.
FusionTarget make_fusion_target(const Graph& g, const RoutingPolicy& policy,
                                std::function<bool(const LibraryGroup&)> tunes_gemm,
                                std::function<bool(const LibraryGroup&)> folds_layer_norm = nullptr);

}  // namespace kiln::schedule
