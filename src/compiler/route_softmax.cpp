// The softmax router, run once per compile on the backend's thresholds; its decisions go to the
// fusion passes through the FusionTarget, with the backend's GEMM tuning rule.
#include "compiler/compile_state.h"
#include "schedule/fuse_library.h"
#include "schedule/softmax_route.h"

namespace kiln::compiler {

std::string route_softmax(CompileState& s) {
  const schedule::RoutingPolicy policy = schedule::routing_policy(s.options, s.backend.routing_thresholds(s.options));
  s.target = schedule::make_fusion_target(
      s.graph, policy, [&g = s.graph, &b = s.backend, &o = s.options](const schedule::LibraryGroup& group) {
        return b.tunes_gemm(g, group, o);
      },
      [&g = s.graph, &b = s.backend, &o = s.options](const schedule::LibraryGroup& group) {
        return b.folds_layer_norm(g, group, o);
      });
  return schedule::explain_routes(s.graph, s.target.routes, policy);  // KILN_DEBUG=route prints it
}

}  // namespace kiln::compiler
