// The softmax router on its own: every branch of decide_route (each setting value, widths on both
// sides of each threshold, masked vs plain, log vs plain, symbolic widths, nodes a route cannot take),
// what softmax_site reads from a graph, the settings' parsing, and the explanation text.
#include <gtest/gtest.h>

#include "routing_test_util.h"
#include "schedule/softmax_route.h"

namespace kiln::routing_test {
namespace {

using schedule::decide_route;
using schedule::RouteDecision;
using schedule::RouteMode;
using schedule::RoutingPolicy;
using schedule::RoutingThresholds;
using schedule::SoftmaxRoute;
using schedule::SoftmaxSite;

constexpr auto kFused = SoftmaxRoute::fused;
constexpr auto kLibrary = SoftmaxRoute::library;
constexpr auto kEager = SoftmaxRoute::eager;

// A plain f32 softmax over the trailing axis that both the row kernel and the library can take.
SoftmaxSite plain(int64_t width) {
  SoftmaxSite s;
  s.node = 0;
  s.width = width;
  s.fusable = true;
  s.library_ok = true;
  return s;
}
SoftmaxSite masked(int64_t width) {
  SoftmaxSite s = plain(width);
  s.masked = true;
  return s;
}
SoftmaxSite log_site(int64_t width) {
  SoftmaxSite s = plain(width);
  s.log = true;
  return s;
}
SoftmaxSite f64_site(int64_t width) {
  SoftmaxSite s = plain(width);
  s.library_ok = false;
  return s;
}
SoftmaxSite non_trailing(int64_t width) {  // f32 over axis 1 of [4, w, 5]: only the library or eager
  SoftmaxSite s = plain(width);
  s.fusable = false;
  s.why_not_fusable = "axis 1 is not the trailing one";
  return s;
}

RoutingPolicy policy(const std::map<std::string, std::string>& settings = {},
                     RoutingThresholds t = {100, 1000, "test thresholds"}) {
  return schedule::routing_policy(options_with(settings), t);
}

SoftmaxRoute route(const SoftmaxSite& s, const RoutingPolicy& p) { return decide_route(s, p).route; }

TEST(Router, PlainSoftmaxByWidthAgainstBothThresholds) {
  RoutingPolicy p = policy();
  EXPECT_EQ(route(plain(1), p), kFused);
  EXPECT_EQ(route(plain(100), p), kFused);     // == max fused width: fused
  EXPECT_EQ(route(plain(101), p), kFused);     // between: the fused (split-row) kernel
  EXPECT_EQ(route(plain(999), p), kFused);
  EXPECT_EQ(route(plain(1000), p), kLibrary);  // == library width: library
  EXPECT_EQ(route(plain(50265), p), kLibrary);
  RouteDecision d = decide_route(plain(500), p);
  EXPECT_NE(d.reason.find("(100, 1000)"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("test thresholds"), std::string::npos) << d.reason;
  d = decide_route(plain(5000), p);
  EXPECT_NE(d.reason.find("width 5000 >= library width 1000 (test thresholds)"), std::string::npos) << d.reason;
  d = decide_route(plain(7), p);
  EXPECT_NE(d.reason.find("width 7 <= max fused width 100"), std::string::npos) << d.reason;
}

TEST(Router, LibraryWidthAtOrBelowMaxFusedWidthSendsEveryWideRowToTheLibrary) {
  RoutingPolicy p = policy({}, {100, 50, "overlap"});
  EXPECT_EQ(route(plain(100), p), kFused);
  EXPECT_EQ(route(plain(101), p), kLibrary);
}

TEST(Router, ShortRowLibraryThreshold) {
  RoutingPolicy p = policy({}, {100, 1000, "calibrated", 16});
  EXPECT_EQ(route(plain(1), p), kLibrary);
  EXPECT_EQ(route(plain(16), p), kLibrary);  // == short-row library width: library
  EXPECT_EQ(route(plain(17), p), kFused);
  EXPECT_EQ(route(plain(100), p), kFused);
  EXPECT_EQ(route(plain(1000), p), kLibrary);
  EXPECT_NE(decide_route(plain(8), p).reason.find("width 8 <= short-row library width 16 (calibrated)"),
            std::string::npos)
      << decide_route(plain(8), p).reason;
  // Only plain softmax follows it; f64 (no library) stays fused.
  EXPECT_EQ(route(masked(8), p), kFused);
  EXPECT_EQ(route(log_site(8), p), kFused);
  EXPECT_EQ(route(f64_site(8), p), kFused);
  // softmax_max_fuse_width=N replaces every threshold: fused up to N, the library above.
  RoutingPolicy n = schedule::routing_policy(options_with({{"softmax_max_fuse_width", "64"}}), {100, 1000, "c", 16});
  EXPECT_EQ(n.thresholds.library_max_width, 0);
  EXPECT_EQ(route(plain(8), n), kFused);
  // 0 keeps every row fused, short ones too.
  EXPECT_EQ(route(plain(8), policy({{"softmax_max_fuse_width", "0"}}, {100, 1000, "c", 16})), kFused);
}

TEST(Router, FusedKernelSplitsRowsAboveMaxFusedWidth) {
  RoutingThresholds t{100, 1000, "t", 16};
  EXPECT_EQ(schedule::split_min_width(t), 101);
  EXPECT_FALSE(schedule::route_by_width(100, t).split_rows);
  EXPECT_TRUE(schedule::route_by_width(101, t).split_rows);
  EXPECT_FALSE(schedule::route_by_width(101, t).library);
  EXPECT_TRUE(schedule::route_by_width(1000, t).library);
  EXPECT_TRUE(schedule::route_by_width(16, t).library);
  EXPECT_EQ(schedule::split_min_width({schedule::kNeverWidth, schedule::kNeverWidth, "never"}), schedule::kNeverWidth);
  EXPECT_EQ(schedule::split_min_width(schedule::default_routing_thresholds()), 32768);
}

TEST(Router, DefaultThresholdsNameTheirSource) {
  RoutingThresholds t = schedule::default_routing_thresholds();
  EXPECT_EQ(t.source, "defaults");
  EXPECT_GT(t.max_fused_width, 0);
  EXPECT_GT(t.library_min_width, t.max_fused_width);
  RoutingPolicy p = schedule::routing_policy(options_with());
  EXPECT_EQ(p.thresholds.source, "defaults");
  // Measured: the fused kernel beat the library at every width, so the defaults never pick it.
  for (int64_t w : {int64_t{1}, t.max_fused_width, t.max_fused_width + 1, int64_t{50265}, int64_t{1} << 40}) {
    RouteDecision d = decide_route(plain(w), p);
    EXPECT_EQ(d.route, kFused) << w;
    EXPECT_NE(d.reason.find("(defaults)"), std::string::npos) << d.reason;
  }
  EXPECT_NE(decide_route(plain(50265), p).reason.find("never"), std::string::npos);
  // The largest width setting is "never" too (no overflow).
  RoutingPolicy max = policy({{"softmax_max_fuse_width", std::to_string(schedule::kNeverWidth)}});
  EXPECT_EQ(max.thresholds.library_min_width, schedule::kNeverWidth);
  EXPECT_EQ(route(plain(int64_t{1} << 62), max), kFused);
}

TEST(Router, SymbolicWidthStaysFused) {
  RouteDecision d = decide_route(plain(-1), policy());
  EXPECT_EQ(d.route, kFused);
  EXPECT_NE(d.reason.find("symbolic"), std::string::npos) << d.reason;
  EXPECT_EQ(route(plain(-1), policy({{"softmax_max_fuse_width", "10"}})), kFused);
  EXPECT_EQ(route(plain(-1), policy({{"softmax_route", "library"}})), kLibrary);
  EXPECT_EQ(route(plain(-1), policy({{"softmax_route", "eager"}})), kEager);
}

TEST(Router, MaxFuseWidthSetting) {
  RoutingPolicy always = policy({{"softmax_max_fuse_width", "0"}});
  EXPECT_EQ(route(plain(1), always), kFused);
  EXPECT_EQ(route(plain(1000000), always), kFused);
  EXPECT_NE(decide_route(plain(5000), always).reason.find("softmax_max_fuse_width=0"), std::string::npos);

  RoutingPolicy n = policy({{"softmax_max_fuse_width", "64"}});
  EXPECT_EQ(n.thresholds.source, "setting softmax_max_fuse_width");
  EXPECT_EQ(route(plain(64), n), kFused);
  EXPECT_EQ(route(plain(65), n), kLibrary);
  EXPECT_NE(decide_route(plain(65), n).reason.find("setting softmax_max_fuse_width"), std::string::npos);
  // It is the plain-softmax rule: masked and log softmax keep their own rules.
  EXPECT_EQ(route(masked(5000), n), kFused);
  EXPECT_EQ(route(log_site(5000), n), kFused);
  // -1 is the thresholds (here the test's: library from 1000).
  EXPECT_EQ(route(plain(500), policy({{"softmax_max_fuse_width", "-1"}})), kFused);
  EXPECT_EQ(route(plain(5000), policy({{"softmax_max_fuse_width", "-1"}})), kLibrary);
  EXPECT_EQ(policy({{"softmax_max_fuse_width", "-1"}}).thresholds.source, "test thresholds");
}

TEST(Router, MaskedSoftmax) {
  RoutingPolicy p = policy();
  EXPECT_EQ(route(masked(8), p), kFused);
  EXPECT_EQ(route(masked(50000), p), kFused);  // wide: still one kernel with its mask
  EXPECT_NE(decide_route(masked(8), p).reason.find("masked_softmax_library_fallback=0"), std::string::npos);
  RoutingPolicy fb = policy({{"masked_softmax_library_fallback", "1"}});
  EXPECT_EQ(route(masked(8), fb), kLibrary);
  EXPECT_EQ(route(masked(-1), fb), kLibrary);
  EXPECT_EQ(route(plain(8), fb), kFused);          // plain softmax ignores the masked setting
  EXPECT_EQ(route(log_site(8), fb), kFused);       // so does LogSoftmax
  SoftmaxSite m64 = masked(8);
  m64.library_ok = false;
  RouteDecision d = decide_route(m64, fb);
  EXPECT_EQ(d.route, kFused);
  EXPECT_NE(d.reason.find("needs f32"), std::string::npos) << d.reason;
}

TEST(Router, LogSoftmax) {
  RoutingPolicy p = policy();
  EXPECT_EQ(route(log_site(8), p), kFused);
  EXPECT_EQ(route(log_site(50265), p), kFused);
  RoutingPolicy fb = policy({{"log_softmax_library_fallback", "true"}});
  EXPECT_EQ(route(log_site(8), fb), kLibrary);
  EXPECT_EQ(route(plain(8), fb), kFused);
  SoftmaxSite masked_log = log_site(8);
  masked_log.masked = true;  // the log rule decides a LogSoftmax, masked or not
  EXPECT_EQ(route(masked_log, fb), kLibrary);
  EXPECT_EQ(route(masked_log, policy({{"masked_softmax_library_fallback", "1"}})), kFused);
  SoftmaxSite log64 = log_site(8);
  log64.library_ok = false;
  EXPECT_EQ(route(log64, fb), kFused);
}

TEST(Router, F64StaysFusedInAuto) {
  RoutingPolicy p = policy();
  EXPECT_EQ(route(f64_site(8), p), kFused);
  RouteDecision d = decide_route(f64_site(50000), p);
  EXPECT_EQ(d.route, kFused);
  EXPECT_NE(d.reason.find("needs f32"), std::string::npos) << d.reason;
}

TEST(Router, NonTrailingAxisIsEagerInAuto) {
  RouteDecision d = decide_route(non_trailing(9), policy());
  EXPECT_EQ(d.route, kEager);
  EXPECT_NE(d.reason.find("axis 1 is not the trailing one"), std::string::npos) << d.reason;
  EXPECT_EQ(route(non_trailing(50000), policy()), kEager);
}

TEST(Router, ForcedRoutes) {
  for (const SoftmaxSite& s : {plain(8), plain(50000), masked(8), log_site(8), plain(-1)}) {
    EXPECT_EQ(route(s, policy({{"softmax_route", "fused"}})), kFused);
    EXPECT_EQ(route(s, policy({{"softmax_route", "library"}})), kLibrary);
    EXPECT_EQ(route(s, policy({{"softmax_route", "eager"}})), kEager);
  }
  // softmax_route wins over the fallback and width settings.
  EXPECT_EQ(route(masked(8), policy({{"softmax_route", "fused"}, {"masked_softmax_library_fallback", "1"}})), kFused);
  EXPECT_EQ(route(plain(50000), policy({{"softmax_route", "fused"}, {"softmax_max_fuse_width", "10"}})), kFused);
  EXPECT_EQ(route(plain(8), policy({{"softmax_route", "library"}, {"softmax_max_fuse_width", "0"}})), kLibrary);
  EXPECT_EQ(decide_route(plain(8), policy({{"softmax_route", "library"}})).reason, "softmax_route=library");
  // A non-trailing axis can go to the library, and f64 to the row kernel.
  EXPECT_EQ(route(non_trailing(9), policy({{"softmax_route", "library"}})), kLibrary);
  EXPECT_EQ(route(f64_site(9), policy({{"softmax_route", "fused"}})), kFused);
  EXPECT_EQ(route(f64_site(9), policy({{"softmax_route", "eager"}})), kEager);
  EXPECT_EQ(route(non_trailing(9), policy({{"softmax_route", "eager"}})), kEager);
}

TEST(Router, ForcedRouteThatCannotBeTakenFallsBackToAuto) {
  RouteDecision d = decide_route(non_trailing(9), policy({{"softmax_route", "fused"}}));
  EXPECT_EQ(d.route, kEager);
  EXPECT_NE(d.reason.find("softmax_route=fused not possible"), std::string::npos) << d.reason;
  d = decide_route(f64_site(50000), policy({{"softmax_route", "library"}}));
  EXPECT_EQ(d.route, kFused);
  EXPECT_NE(d.reason.find("softmax_route=library not possible"), std::string::npos) << d.reason;
  SoftmaxSite neither = non_trailing(9);
  neither.library_ok = false;  // e.g. an integer input
  EXPECT_EQ(route(neither, policy({{"softmax_route", "library"}})), kEager);
}

TEST(Router, SettingsParsing) {
  EXPECT_EQ(policy().mode, RouteMode::automatic);
  EXPECT_EQ(policy({{"softmax_route", "auto"}}).mode, RouteMode::automatic);
  EXPECT_EQ(policy({{"softmax_route", "fused"}}).mode, RouteMode::fused);
  EXPECT_EQ(policy({{"softmax_route", "library"}}).mode, RouteMode::library);
  EXPECT_EQ(policy({{"softmax_route", "eager"}}).mode, RouteMode::eager);
  EXPECT_THROW(policy({{"softmax_route", "fastest"}}), UserError);
  EXPECT_THROW(policy({{"softmax_max_fuse_width", "-2"}}), UserError);
  EXPECT_THROW(options_with({{"masked_softmax_library_fallback", "maybe"}}), UserError);
  EXPECT_THROW(options_with({{"softmax_max_fuse_width", "wide"}}), UserError);
  const Options defaults;
  EXPECT_EQ(defaults.softmax_route, "auto");
  EXPECT_EQ(defaults.softmax_max_fuse_width, -1);
  EXPECT_FALSE(defaults.masked_softmax_library_fallback);
  EXPECT_FALSE(defaults.log_softmax_library_fallback);
  // Every setting has its environment variable in the table.
  int found = 0;
  for (const SettingInfo& s : settings_table()) {
    std::string name = s.name;
    if (name == "softmax_route" || name == "softmax_max_fuse_width" || name == "masked_softmax_library_fallback" ||
        name == "log_softmax_library_fallback") {
      ++found;
      EXPECT_EQ(std::string(s.env), "KILN_" + [&] {
        std::string up = name;
        for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return up;
      }());
      EXPECT_FALSE(s.affects_code) << name;
    }
  }
  EXPECT_EQ(found, 4);
}

TEST(Router, EnvironmentVariablesSetTheRoute) {
  ::setenv("KILN_SOFTMAX_ROUTE", "library", 1);
  ::setenv("KILN_LOG_SOFTMAX_LIBRARY_FALLBACK", "1", 1);
  Options o = Options::from_environment();
  ::unsetenv("KILN_SOFTMAX_ROUTE");
  ::unsetenv("KILN_LOG_SOFTMAX_LIBRARY_FALLBACK");
  EXPECT_EQ(schedule::routing_policy(o).mode, RouteMode::library);
  EXPECT_TRUE(o.log_softmax_library_fallback);
}

}  // namespace
}  // namespace kiln::routing_test
