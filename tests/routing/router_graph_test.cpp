// The router on graphs: what softmax_site reads (width, symbolic width, masked by Add / Where / guard,
// trailing axis, dtype), and how the group finders split the nodes between the routes (library groups
// and row groups with the options overloads; the old overloads keep every softmax fused). Nothing is
// compiled here.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_device.h"
#include "routing_test_util.h"
#include "schedule/fuse_library.h"
#include "schedule/fuse_pointwise.h"
#include "schedule/fuse_rows.h"
#include "schedule/softmax_route.h"

namespace kiln::routing_test {
namespace {

using schedule::RoutedNode;
using schedule::SoftmaxRoute;

std::vector<RoutedNode> routes(const Graph& g, const std::map<std::string, std::string>& settings = {}) {
  return schedule::route_softmax_nodes(g, schedule::routing_policy(options_with(settings)));
}

// How the finders (in the session's order) place the softmax nodes: counts of groups of each kind.
struct Placement {
  int library = 0, row = 0, pointwise = 0;
  bool softmax_claimed = false;  // some group holds the Softmax / LogSoftmax node
};
Placement place(const Graph& g, const std::map<std::string, std::string>& settings) {
  Options o = options_with(settings);
  std::vector<char> claimed(g.nodes.size(), 0);
  Placement p;
  auto claim = [&](const std::vector<NodeId>& nodes) {
    for (NodeId n : nodes) {
      claimed[size_t(n)] = 1;
      OpKind op = g.nodes[size_t(n)].op;
      p.softmax_claimed |= op == OpKind::Softmax || op == OpKind::LogSoftmax;
    }
  };
  for (const auto& grp : schedule::find_library_groups(g, claimed, backend::cpu::fusion_target(g, o))) {
    claim(grp.nodes);
    ++p.library;
  }
  for (const auto& grp : schedule::find_row_groups(g, claimed, backend::cpu::fusion_target(g, o))) {
    claim(grp.nodes);
    ++p.row;
  }
  for (const auto& grp : schedule::find_pointwise_groups(g, claimed)) {
    claim(grp.nodes);
    ++p.pointwise;
  }
  return p;
}

TEST(RouterGraph, SiteReadsWidthAxisAndDtype) {
  auto r = routes(softmax_graph({Dim::fixed(4), Dim::fixed(768)}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].site.width, 768);
  EXPECT_TRUE(r[0].site.fusable);
  EXPECT_TRUE(r[0].site.library_ok);
  EXPECT_FALSE(r[0].site.masked);
  EXPECT_FALSE(r[0].site.log);

  r = routes(softmax_graph({Dim::sym("n"), Dim::sym("w")}, -1, true));
  EXPECT_EQ(r[0].site.width, -1);
  EXPECT_TRUE(r[0].site.log);
  EXPECT_EQ(r[0].decision.route, SoftmaxRoute::fused);

  r = routes(softmax_graph({Dim::fixed(4), Dim::fixed(9), Dim::fixed(5)}, 1));
  EXPECT_EQ(r[0].site.width, 9);
  EXPECT_FALSE(r[0].site.fusable);
  EXPECT_TRUE(r[0].site.library_ok);
  EXPECT_EQ(r[0].decision.route, SoftmaxRoute::eager);

  r = routes(softmax_graph({Dim::fixed(4), Dim::fixed(9), Dim::fixed(1)}, 1));  // trailing static 1s: fusable
  EXPECT_TRUE(r[0].site.fusable);

  r = routes(softmax_graph({Dim::fixed(4), Dim::fixed(50000)}, -1, false, DType::f64));
  EXPECT_TRUE(r[0].site.fusable);
  EXPECT_FALSE(r[0].site.library_ok);
  EXPECT_EQ(r[0].decision.route, SoftmaxRoute::fused);

  r = routes(softmax_graph({Dim::fixed(4), Dim::fixed(50000)}));
  EXPECT_EQ(r[0].decision.route, SoftmaxRoute::fused);  // the defaults never pick the library
  r = routes(softmax_graph({Dim::fixed(4), Dim::fixed(50000)}), {{"softmax_max_fuse_width", "4096"}});
  EXPECT_EQ(r[0].decision.route, SoftmaxRoute::library);
}

TEST(RouterGraph, MaskedByAddWhereOrGuard) {
  EXPECT_TRUE(routes(masked_softmax_graph(2, Dim::fixed(8)))[0].site.masked);
  EXPECT_TRUE(routes(masked_softmax_graph(2, Dim::fixed(8), /*guard=*/false))[0].site.masked);  // the Add
  {
    GraphBuilder b("where_mask");  // masked_fill: Where(mask, x, -1e4) before the Softmax
    ValueId x = b.input("x", DType::f32, {2, 8});
    ValueId m = b.input("m", DType::boolean, {2, 8});
    ValueId w = b.op(OpKind::Where, {m, x, b.scalar(DType::f32, -1e4)});
    b.output(b.op(OpKind::Softmax, {w}, {{"axis", -1}}), "y");
    EXPECT_TRUE(routes(inferred(b))[0].site.masked);
  }
  {
    GraphBuilder b("guard_only");
    ValueId x = b.input("x", DType::f32, {2, 8});
    ValueId s = b.op(OpKind::Softmax, {x}, {{"axis", -1}});
    b.output(b.op(OpKind::Where, {b.op(OpKind::IsNaN, {s}), b.scalar(DType::f32, 0.0), s}), "y");
    EXPECT_TRUE(routes(inferred(b))[0].site.masked);
  }
  EXPECT_FALSE(routes(scaled_softmax_graph({Dim::fixed(2), Dim::fixed(8)}))[0].site.masked);  // a Mul: plain
}

TEST(RouterGraph, OldOverloadsKeepEverySoftmaxFused) {
  Graph g = softmax_graph({Dim::fixed(4), Dim::fixed(50000)});
  std::vector<char> claimed(g.nodes.size(), 0);
  EXPECT_TRUE(schedule::find_library_groups(g, claimed).empty());
  EXPECT_EQ(schedule::find_row_groups(g, claimed).size(), 1u);
}

TEST(RouterGraph, PlainSoftmaxPlacement) {
  Graph narrow = softmax_graph({Dim::fixed(4), Dim::fixed(768)});
  Placement p = place(narrow, {});
  EXPECT_EQ(p.library, 0);
  EXPECT_EQ(p.row, 1);
  p = place(narrow, {{"softmax_route", "library"}});
  EXPECT_EQ(p.library, 1);
  EXPECT_EQ(p.row, 0);
  p = place(narrow, {{"softmax_route", "eager"}});
  EXPECT_EQ(p.library + p.row + p.pointwise, 0);
  EXPECT_FALSE(p.softmax_claimed);

  Graph wide = softmax_graph({Dim::fixed(4), Dim::fixed(50000)});
  p = place(wide, {});
  EXPECT_EQ(p.library, 0);
  EXPECT_EQ(p.row, 1);
  p = place(wide, {{"softmax_max_fuse_width", "4096"}});
  EXPECT_EQ(p.library, 1);
  EXPECT_EQ(p.row, 0);
  p = place(wide, {{"softmax_max_fuse_width", "0"}});
  EXPECT_EQ(p.library, 0);
  EXPECT_EQ(p.row, 1);
  p = place(wide, {{"softmax_route", "fused"}});
  EXPECT_EQ(p.row, 1);
}

TEST(RouterGraph, NeighboursOfALibrarySoftmaxBecomeTheirOwnKernels) {
  Graph g = scaled_softmax_graph({Dim::fixed(4), Dim::fixed(50000)});
  Placement p = place(g, {{"softmax_max_fuse_width", "4096"}});
  EXPECT_EQ(p.library, 1);
  EXPECT_EQ(p.row, 0);
  EXPECT_EQ(p.pointwise, 0);  // the Mul alone: its own (eager) kernel
  p = place(g, {{"softmax_route", "fused"}});
  EXPECT_EQ(p.library, 0);
  EXPECT_EQ(p.row, 1);  // Mul and Softmax in one kernel
  EXPECT_EQ(p.pointwise, 0);
}

TEST(RouterGraph, MaskedSoftmaxPlacement) {
  Graph g = masked_softmax_graph(3, Dim::sym("seq"));
  Placement p = place(g, {});
  EXPECT_EQ(p.library, 0);
  EXPECT_EQ(p.row, 1);  // mask, Add, Softmax and guard in one kernel
  EXPECT_EQ(p.pointwise, 0);
  p = place(g, {{"masked_softmax_library_fallback", "1"}});
  EXPECT_EQ(p.library, 1);
  EXPECT_EQ(p.row, 0);
  EXPECT_GE(p.pointwise, 1);  // the guard after (the mask Add: its own kernels)
  p = place(g, {{"softmax_route", "eager"}});
  EXPECT_EQ(p.library + p.row, 0);
  EXPECT_FALSE(p.softmax_claimed);
}

TEST(RouterGraph, LogSoftmaxPlacement) {
  Graph g = softmax_graph({Dim::fixed(3), Dim::fixed(50265)}, -1, true);
  Placement p = place(g, {});
  EXPECT_EQ(p.row, 1);
  EXPECT_EQ(p.library, 0);
  p = place(g, {{"log_softmax_library_fallback", "1"}});
  EXPECT_EQ(p.library, 1);
  EXPECT_EQ(p.row, 0);
  auto groups = schedule::find_library_groups(
      g, std::vector<char>(g.nodes.size(), 0),
      backend::cpu::fusion_target(g, options_with({{"log_softmax_library_fallback", "1"}})));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].core, schedule::LibraryCore::log_softmax);
  EXPECT_EQ(groups[0].label, "log_softmax");
  EXPECT_EQ(groups[0].inputs.size(), 1u);
}

TEST(RouterGraph, ClaimedNodesAreLeftAlone) {
  Graph g = softmax_graph({Dim::fixed(4), Dim::fixed(50000)});
  std::vector<char> claimed(g.nodes.size(), 1);
  EXPECT_TRUE(schedule::find_library_groups(g, claimed, backend::cpu::fusion_target(g, options_with())).empty());
  EXPECT_TRUE(schedule::find_row_groups(g, claimed, backend::cpu::fusion_target(g, options_with({{"softmax_route", "fused"}})))
                  .empty());
}

TEST(RouterGraph, ExplainNamesEachNodeWidthRouteAndReason) {
  GraphBuilder b("two");
  ValueId x = b.input("x", DType::f32, {2, 50000});
  ValueId z = b.input("z", DType::f32, Shape{Dim::sym("n"), Dim::sym("w")});
  b.output(b.op(OpKind::Softmax, {x}, {{"axis", -1}}, "wide_sm"), "y");
  b.output(b.op(OpKind::LogSoftmax, {z}, {{"axis", -1}}, "sym_lsm"), "y2");
  Graph g = inferred(b);
  std::string text = backend::cpu::explain_softmax_routes(g, options_with());
  EXPECT_NE(text.find("thresholds: library up to 0, fused up to 32767 (split rows above), library from never (defaults)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("node 'wide_sm' Softmax width 50000 -> fused: width 50000 in (32767, never): the split-row fused kernel"), std::string::npos)
      << text;
  EXPECT_NE(text.find("node 'sym_lsm' LogSoftmax width symbolic -> fused"), std::string::npos) << text;
  std::string limited = backend::cpu::explain_softmax_routes(g, options_with({{"softmax_max_fuse_width", "4096"}}));
  EXPECT_NE(limited.find("node 'wide_sm' Softmax width 50000 -> library: width 50000 >= library width 4097 "
                         "(setting softmax_max_fuse_width)"),
            std::string::npos)
      << limited;

  // KILN_DEBUG=route prints the same when a compile routes (once), and nothing without it.
  ::testing::internal::CaptureStderr();
  Session::from_graph(g, Mode::compiled, options_with({{"debug", "route"}}));
  std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "# route_softmax\n" + text);
  ::testing::internal::CaptureStderr();
  Session::from_graph(g, Mode::compiled, options_with());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");

  text = backend::cpu::explain_softmax_routes(g, options_with({{"softmax_max_fuse_width", "100000"}}));
  EXPECT_NE(text.find("(setting softmax_max_fuse_width)"), std::string::npos) << text;
  EXPECT_NE(text.find("node 'wide_sm' Softmax width 50000 -> fused"), std::string::npos) << text;
  EXPECT_EQ(backend::cpu::explain_softmax_routes(scaled_softmax_graph({Dim::fixed(1), Dim::fixed(2)}), options_with())
                .find("Mul"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::routing_test
