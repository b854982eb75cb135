#include "schedule/fusion_target.h"

namespace kiln::schedule {

FusionTarget make_fusion_target(const Graph& g, const RoutingPolicy& policy,
                                std::function<bool(const LibraryGroup&)> tunes_gemm,
                                std::function<bool(const LibraryGroup&)> folds_layer_norm) {
  FusionTarget t;
  t.routes = route_softmax_nodes(g, policy);
  t.softmax_split_width = split_min_width(policy.thresholds);
  t.tunes_gemm = std::move(tunes_gemm);
  t.folds_layer_norm = std::move(folds_layer_norm);
  return t;
}

}  // namespace kiln::schedule
