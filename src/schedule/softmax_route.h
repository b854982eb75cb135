// Where each softmax-family node (Softmax, LogSoftmax) runs in compiled mode. Three routes, all exact
// to ONNX semantics (NaN rows, +-inf, width 1):
//   fused   - a generated row kernel with its pointwise neighbours (fuse_rows.h): the mask Add before
//             and the NaN guard after stay in the one kernel; per-row below 32768 columns, split-row
//             above (emit_row.h);
//   library - oneDNN's softmax primitive (kernels/onednn/softmax.h) as a LibraryGroup of the node
//             alone (fuse_library.h); a mask Add before it and a guard after it run apart (pointwise
//             kernels, or eager nodes when alone);
//   eager   - neither pass takes the node: its own kernel runs.
// find_library_groups(g, claimed, options) makes the library groups, find_row_groups(g, claimed,
// options) leaves every softmax anchor whose route is not `fused` alone.
//
// The decision (decide_route), first rule that applies:
//   1. softmax_route=fused|library|eager: that route, when the node can take it (fused: a row kernel
//      can compute it, i.e. f32/f64 over the trailing axis; library: f32); otherwise rule 2 onwards
//      decides, and the reason says so.
//   2. No row kernel can compute it (axis not trailing, not f32/f64): eager, as before routing (not
//      measured against oneDNN; softmax_route=library sends the f32 ones there).
//   3. LogSoftmax: library with log_softmax_library_fallback (and f32), else fused.
//   4. A masked Softmax (its input made by an Add or Where, or a NaN guard Where(IsNaN(s), ., s)
//      after it): library with masked_softmax_library_fallback (and f32), else fused as one kernel.
//   5. Plain Softmax: softmax_max_fuse_width=0: fused. A symbolic width: fused (the kernel picks its
//      strategy at run time). Not f32: fused. softmax_max_fuse_width=N > 0: library when wider than N.
//      Else the thresholds (route_by_width): up to library_max_width the library (short rows, where a
//      calibration found oneDNN faster); up to max_fused_width fused, one row per iteration, with
//      neighbours; from library_min_width the library; in between fused with rows split across
//      threads. The defaults never choose the library (see default_routing_thresholds).
// The fused kernel of every Softmax / LogSoftmax splits its rows from max_fused_width + 1 columns
// (split_min_width; also at run time for a symbolic width), so a calibration moves that point too.
// Every decision carries a one-line reason naming the rule, threshold and where it came from
// (KILN_DEBUG=route prints them when the library groups are found; explain_softmax_routes gives the
// text for `kiln compile --explain`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/options.h"

namespace kiln::schedule {

enum class SoftmaxRoute : uint8_t { fused, library, eager };
const char* route_name(SoftmaxRoute r);

inline constexpr int64_t kNeverWidth = INT64_MAX;  // a threshold no width reaches

// What the width rule of plain softmax compares against. Defaults measured on this project's CPU
// (tests/routing/route_bench_test.cpp: the fused kernel won at every width, so the defaults never
// pick the library); a calibration (a per-device tuning database, later) passes its own to
// routing_policy and names itself in `source`.
struct RoutingThresholds {
  int64_t max_fused_width = 0;    // rows up to this many columns stay fused with their neighbours
  int64_t library_min_width = 0;  // wider rows: the library from this width (kNeverWidth: never), the
                                  // fused kernel below it
  std::string source;             // "defaults", "calibration <file>", "setting softmax_max_fuse_width"
  int64_t library_max_width = 0;  // rows up to this many columns: the library (short rows; 0: none)
};
RoutingThresholds default_routing_thresholds();

// Where the fused kernel starts splitting rows across threads under t: max_fused_width + 1.
int64_t split_min_width(const RoutingThresholds& t);

struct WidthRoute {
  bool library = false;     // else fused
  bool split_rows = false;  // fused: rows split across threads
  std::string reason;
};
// The threshold part of rule 5 for a known width (also what `kiln sweep softmax` marks as routed).
WidthRoute route_by_width(int64_t width, const RoutingThresholds& t);

enum class RouteMode : uint8_t { automatic, fused, library, eager };

// The routing settings of Options, checked, with the thresholds they apply to.
struct RoutingPolicy {
  RouteMode mode = RouteMode::automatic;
  int64_t max_fuse_width = -1;  // softmax_max_fuse_width: -1 thresholds, 0 always fused, N library above N
  bool masked_library_fallback = false;
  bool log_library_fallback = false;
  RoutingThresholds thresholds;
};
// A bad softmax_route value or a softmax_max_fuse_width below -1 is a user error.
RoutingPolicy routing_policy(const Options& options, RoutingThresholds thresholds = default_routing_thresholds());

// What the router knows of one node.
struct SoftmaxSite {
  NodeId node = -1;
  bool log = false;         // LogSoftmax
  int64_t width = -1;       // the length of the softmax axis; -1 when symbolic
  bool fusable = false;     // a row kernel can compute it (row_split)
  bool library_ok = false;  // the oneDNN call can (f32 in and out, one input, a valid axis)
  bool masked = false;      // a mask Add/Where makes its input, or a NaN guard reads its output
  std::string why_not_fusable;  // when !fusable, for the reason text
};
// The site of a Softmax or LogSoftmax node (`uses` from g.use_counts()).
SoftmaxSite softmax_site(const Graph& g, NodeId node, const std::vector<int>& uses);

struct RouteDecision {
  SoftmaxRoute route = SoftmaxRoute::eager;
  std::string reason;
};
RouteDecision decide_route(const SoftmaxSite& site, const RoutingPolicy& policy);

struct RoutedNode {
  SoftmaxSite site;
  RouteDecision decision;
};
// Every Softmax / LogSoftmax node of g, in node order, with its route.
std::vector<RoutedNode> route_softmax_nodes(const Graph& g, const RoutingPolicy& policy);

// One line per routed node ("route: node 'sm' Softmax width 768 -> library: ..."), after a line
// naming the thresholds and their source. For KILN_DEBUG=route and `kiln compile --explain`.
std::string explain_routes(const Graph& g, const std::vector<RoutedNode>& routes, const RoutingPolicy& policy);
}  // namespace kiln::schedule
