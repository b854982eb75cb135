// The softmax-family router (see softmax_route.h).
#include "schedule/softmax_route.h"

#include <fmt/format.h>


#include "schedule/row_nodes.h"
#include "support/error.h"

namespace kiln::schedule {

const char* route_name(SoftmaxRoute r) {
  switch (r) {
    case SoftmaxRoute::fused: return "fused";
    case SoftmaxRoute::library: return "library";
    case SoftmaxRoute::eager: return "eager";
  }
  return "?";
}

RoutingThresholds default_routing_thresholds() {
  // Measured with tests/routing/route_bench_test.cpp on the project's machine (AMD EPYC, AVX-512, 1 and
  // 2 threads; 1, 4 and 64 rows; widths 64..50265): the fused per-row kernel was the fastest at every
  // width, the library call (oneDNN jit:avx512_core, its NaN scan and its output allocation) 1.3-3x
  // slower, the split-row kernel never faster than per-row with two threads. So rows stay per-row
  // fused below the split width and the library is never chosen by default; a calibration on a
  // machine where oneDNN wins sets library_min_width.
  return RoutingThresholds{.max_fused_width = 32767, .library_min_width = kNeverWidth, .source = "defaults",
                           .library_max_width = 0};
}

namespace {
std::string limit_text(int64_t w) { return w == kNeverWidth ? std::string("never") : std::to_string(w); }
}  // namespace

int64_t split_min_width(const RoutingThresholds& t) {
  return t.max_fused_width >= kNeverWidth - 1 ? kNeverWidth : t.max_fused_width + 1;
}

WidthRoute route_by_width(int64_t w, const RoutingThresholds& t) {
  if (w <= t.library_max_width)
    return {true, false, fmt::format("width {} <= short-row library width {} ({})", w, t.library_max_width, t.source)};
  if (w <= t.max_fused_width)
    return {false, false, fmt::format("width {} <= max fused width {} ({})", w, t.max_fused_width, t.source)};
  if (w >= t.library_min_width)
    return {true, false, fmt::format("width {} >= library width {} ({})", w, t.library_min_width, t.source)};
  return {false, true,
          fmt::format("width {} in ({}, {}): the split-row fused kernel beats the library ({})", w, t.max_fused_width,
                      limit_text(t.library_min_width), t.source)};
}

RoutingPolicy routing_policy(const Options& options, RoutingThresholds thresholds) {
  RoutingPolicy p;
  const std::string& m = options.softmax_route;
  if (m == "auto") p.mode = RouteMode::automatic;
  else if (m == "fused") p.mode = RouteMode::fused;
  else if (m == "library") p.mode = RouteMode::library;
  else if (m == "eager") p.mode = RouteMode::eager;
  else user_error("setting softmax_route: '{}' is not one of auto, fused, library, eager", m);
  if (options.softmax_max_fuse_width < -1)
    user_error("setting softmax_max_fuse_width: {} (use -1 for the thresholds, 0 for always fused, or a width)",
               options.softmax_max_fuse_width);
  p.max_fuse_width = options.softmax_max_fuse_width;
  p.masked_library_fallback = options.masked_softmax_library_fallback;
  p.log_library_fallback = options.log_softmax_library_fallback;
  if (p.max_fuse_width > 0)
    thresholds = RoutingThresholds{p.max_fuse_width, p.max_fuse_width == kNeverWidth ? kNeverWidth : p.max_fuse_width + 1,
                                   "setting softmax_max_fuse_width"};
  else if (p.max_fuse_width == 0)
    thresholds.source = "setting softmax_max_fuse_width=0";
  p.thresholds = std::move(thresholds);
  return p;
}

namespace {


// Nodes reading value v.
std::vector<NodeId> readers(const Graph& g, ValueId v) {
  std::vector<NodeId> r;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs)
      if (in == v) {
        r.push_back(static_cast<NodeId>(i));
        break;
      }
  return r;
}

// The safe-softmax guard after y: Where(IsNaN(y), ., y) (or with y as the other branch).
bool guarded(const Graph& g, ValueId y) {
  for (NodeId c : readers(g, y)) {
    const Node& isnan = g.nodes[size_t(c)];
    if (isnan.op != OpKind::IsNaN || isnan.outputs.empty() || isnan.outputs[0] == kNoValue) continue;
    for (NodeId w : readers(g, isnan.outputs[0])) {
      const Node& where = g.nodes[size_t(w)];
      if (where.op == OpKind::Where && where.inputs.size() == 3 && where.inputs[0] == isnan.outputs[0] &&
          (where.inputs[1] == y || where.inputs[2] == y))
        return true;
    }
  }
  return false;
}

std::string width_text(int64_t w) { return w < 0 ? std::string("symbolic") : std::to_string(w); }

const char* mode_setting(RouteMode m) {
  switch (m) {
    case RouteMode::automatic: return "auto";
    case RouteMode::fused: return "fused";
    case RouteMode::library: return "library";
    case RouteMode::eager: return "eager";
  }
  return "?";
}

// Rules 2-5 of softmax_route.h: the automatic decision.
RouteDecision decide_automatic(const SoftmaxSite& s, const RoutingPolicy& p) {
  using R = SoftmaxRoute;
  if (!s.fusable) return {R::eager, fmt::format("no row kernel ({}): its own kernel", s.why_not_fusable)};
  if (s.log) {
    if (p.log_library_fallback && s.library_ok) return {R::library, "log_softmax_library_fallback=1"};
    if (p.log_library_fallback) return {R::fused, "log_softmax_library_fallback=1 but the library needs f32"};
    return {R::fused, "LogSoftmax stays fused (log_softmax_library_fallback=0)"};
  }
  if (s.masked) {
    if (p.masked_library_fallback && s.library_ok)
      return {R::library, "masked softmax, masked_softmax_library_fallback=1: the mask and guard run apart"};
    if (p.masked_library_fallback) return {R::fused, "masked_softmax_library_fallback=1 but the library needs f32"};
    return {R::fused, "masked softmax stays one kernel with its mask and guard (masked_softmax_library_fallback=0)"};
  }
  if (p.max_fuse_width == 0) return {R::fused, "softmax_max_fuse_width=0: always fused"};
  if (s.width < 0) return {R::fused, "symbolic width: the fused kernel picks per-row or split-row at run time"};
  if (!s.library_ok) return {R::fused, "the library needs f32"};
  WidthRoute w = route_by_width(s.width, p.thresholds);
  return {w.library ? R::library : R::fused, std::move(w.reason)};
}

}  // namespace

SoftmaxSite softmax_site(const Graph& g, NodeId node, const std::vector<int>& uses) {
  const Node& n = g.nodes[size_t(node)];
  KILN_INTERNAL_CHECK(n.op == OpKind::Softmax || n.op == OpKind::LogSoftmax, "softmax_site: {}", g.describe(n));
  SoftmaxSite s;
  s.node = node;
  s.log = n.op == OpKind::LogSoftmax;
  if (!n.has_input(0) || n.outputs.empty() || n.outputs[0] == kNoValue) {
    s.why_not_fusable = "malformed node";
    return s;
  }
  const TensorType& x = g.value(n.inputs[0]).type;
  const TensorType& y = g.value(n.outputs[0]).type;
  int64_t axis = 0;
  try {
    axis = n.attr_int("axis", -1);
  } catch (const UserError&) {
    s.why_not_fusable = "bad axis attribute";
    return s;  // the eager kernel reports it
  }
  if (axis < 0) axis += x.rank();
  if (x.rank() == 0 || axis < 0 || axis >= x.rank()) {
    s.why_not_fusable = "axis out of range";
    return s;
  }
  const Dim& w = x.shape[size_t(axis)];
  s.width = w.is_static() ? w.value : -1;
  s.fusable = row_split(g, n, uses).has_value();
  if (!s.fusable) {
    if (!is_float(x.dtype)) s.why_not_fusable = fmt::format("dtype {}", dtype_name(x.dtype));
    else if (axis + 1 < x.rank()) s.why_not_fusable = fmt::format("axis {} is not the trailing one", axis);
    else s.why_not_fusable = "unsupported form";
  }
  s.library_ok = x.dtype == DType::f32 && y.dtype == DType::f32 && n.inputs.size() == 1 && n.outputs.size() == 1;
  ValueId in = n.inputs[0];
  NodeId p = g.value(in).producer;
  bool mask_before = p >= 0 && (g.nodes[size_t(p)].op == OpKind::Add || g.nodes[size_t(p)].op == OpKind::Where);
  s.masked = mask_before || guarded(g, n.outputs[0]);
  return s;
}

RouteDecision decide_route(const SoftmaxSite& s, const RoutingPolicy& p) {
  using R = SoftmaxRoute;
  switch (p.mode) {
    case RouteMode::automatic: return decide_automatic(s, p);
    case RouteMode::eager: return {R::eager, "softmax_route=eager"};
    case RouteMode::fused:
      if (s.fusable) return {R::fused, "softmax_route=fused"};
      break;
    case RouteMode::library:
      if (s.library_ok) return {R::library, "softmax_route=library"};
      break;
  }
  RouteDecision d = decide_automatic(s, p);
  const char* lacking = p.mode == RouteMode::fused ? "no row kernel" : "the library needs f32";
  d.reason = fmt::format("softmax_route={} not possible ({}); auto: {}", mode_setting(p.mode), lacking, d.reason);
  return d;
}

std::vector<RoutedNode> route_softmax_nodes(const Graph& g, const RoutingPolicy& policy) {
  std::vector<RoutedNode> r;
  std::vector<int> uses;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    OpKind op = g.nodes[i].op;
    if (op != OpKind::Softmax && op != OpKind::LogSoftmax) continue;
    if (uses.empty()) uses = g.use_counts();
    SoftmaxSite site = softmax_site(g, static_cast<NodeId>(i), uses);
    RouteDecision d = decide_route(site, policy);
    r.push_back({std::move(site), std::move(d)});
  }
  return r;
}

std::string explain_routes(const Graph& g, const std::vector<RoutedNode>& routes, const RoutingPolicy& p) {
  if (routes.empty()) return {};
  const RoutingThresholds& t = p.thresholds;
  std::string text = fmt::format(
      "route: softmax_route={} softmax_max_fuse_width={} masked_softmax_library_fallback={} "
      "log_softmax_library_fallback={}; thresholds: library up to {}, fused up to {} (split rows above), library "
      "from {} ({})\n",
      mode_setting(p.mode), p.max_fuse_width, p.masked_library_fallback ? 1 : 0, p.log_library_fallback ? 1 : 0,
      t.library_max_width, limit_text(t.max_fused_width), limit_text(t.library_min_width), t.source);
  for (const RoutedNode& r : routes) {
    const Node& n = g.nodes[size_t(r.site.node)];
    text += fmt::format("route: node '{}' {}{} width {} -> {}: {}\n", n.name, op_name(n.op), r.site.masked ? " (masked)" : "",
                        width_text(r.site.width), route_name(r.decision.route), r.decision.reason);
  }
  return text;
}

}  // namespace kiln::schedule
