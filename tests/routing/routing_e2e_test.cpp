// Each route end to end: Session::from_graph(graph, Mode::compiled, options) against Mode::reference
// (fp64) on small graphs, with rows of all -inf, NaN, +inf, -inf with one NaN, width 1, odd widths
// and wide rows (40000), checking from Session::stats() which route was taken (library_kernels,
// fused_kernels). Few sessions compile kernels (symbolic sizes share one kernel across widths); the
// kernel cache is private to this process.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_device.h"
#include "autotune/softmax_calibration.h"
#include "routing_test_util.h"
#include "schedule/fuse_rows.h"
#include "schedule/softmax_route.h"

namespace kiln::routing_test {
namespace {

using Settings = std::map<std::string, std::string>;

struct Expect {
  int library = 0;
  int fused = 0;  // generated kernels; -1: any number >= 1
};

void expect_stats(const Session& s, Expect e, const std::string& what) {
  RunStats st = s.stats();
  EXPECT_EQ(st.library_kernels, e.library) << what;
  if (e.fused < 0) {
    EXPECT_GE(st.fused_kernels, 1) << what;
  } else {
    EXPECT_EQ(st.fused_kernels, e.fused) << what;
  }
}

// Input [rows, w] with specials sprinkled in and the special rows of add_special_rows.
Tensor rows_input(int64_t rows, int64_t w, uint32_t seed) {
  Tensor x = random_with_specials({rows, w}, seed, w > 3 ? 97 : 0);
  add_special_rows(x, rows, w);
  return x;
}

const std::vector<int64_t> kWidths = {1, 3, 17, 1000, 40000};

TEST(RoutingEndToEnd, PlainSoftmaxOnEveryRoute) {
  // Fused: a symbolic width keeps one kernel for every width (per-row below 32768, split-row above).
  SessionPair fused = sessions(softmax_graph({Dim::sym("n"), Dim::sym("w")}), options_with());
  expect_stats(fused.compiled, {0, 1}, "fused");
  for (const char* route : {"library", "eager"}) {
    for (int64_t w : kWidths) {
      // Static widths, symbolic rows: each route at each width, including zero rows.
      Graph g = softmax_graph({Dim::sym("n"), Dim::fixed(w)});
      SessionPair s = sessions(g, options_with({{"softmax_route", route}}));
      expect_stats(s.compiled, {route == std::string("library") ? 1 : 0, 0}, route);
      EXPECT_EQ(s.compiled.stats().kernels, 1) << route;
      for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{6}}) {
        std::map<std::string, Tensor> in{{"x", rows_input(rows, w, static_cast<uint32_t>(w + rows))}};
        expect_matches_reference(s, in, std::string(route) + " w=" + std::to_string(w) + " rows=" + std::to_string(rows));
        if (rows > 0) expect_matches_reference(fused, in, "fused w=" + std::to_string(w));
      }
    }
  }
}

TEST(RoutingEndToEnd, AutoRoutesPlainSoftmaxByWidth) {
  // The defaults keep wide rows fused (split-row from 32768 columns); the width setting moves them to
  // the library, and narrow rows stay fused under both.
  Graph wide = softmax_graph({Dim::fixed(6), Dim::fixed(40000)});
  Graph narrow = softmax_graph({Dim::fixed(7), Dim::fixed(1000)});
  SessionPair wide_default = sessions(wide, options_with());
  expect_stats(wide_default.compiled, {0, 1}, "auto defaults, width 40000");
  expect_matches_reference(wide_default, {{"x", rows_input(6, 40000, 1)}}, "auto wide defaults");

  const Settings limit{{"softmax_max_fuse_width", "1000"}};
  SessionPair wide_limited = sessions(wide, options_with(limit));
  expect_stats(wide_limited.compiled, {1, 0}, "softmax_max_fuse_width=1000, width 40000");
  expect_matches_reference(wide_limited, {{"x", rows_input(6, 40000, 2)}}, "auto wide limited");

  SessionPair narrow_limited = sessions(narrow, options_with(limit));
  expect_stats(narrow_limited.compiled, {0, 1}, "softmax_max_fuse_width=1000, width 1000");
  expect_matches_reference(narrow_limited, {{"x", rows_input(7, 1000, 3)}}, "auto narrow");

  SessionPair moved = sessions(narrow, options_with({{"softmax_max_fuse_width", "999"}}));
  expect_stats(moved.compiled, {1, 0}, "softmax_max_fuse_width=999, width 1000");
  expect_matches_reference(moved, {{"x", rows_input(7, 1000, 4)}}, "moved");
}

TEST(RoutingEndToEnd, CalibrationMovesTheSplitWidthAndSendsShortRowsToTheLibrary) {
  // A calibration in a cache of its own (the other tests keep the defaults): the library for rows up to
  // 64 columns, rows split across threads from 1024.
  Options o = options_with();
  o.cache_dir = (ProcessCache::root() / "calibrated").string();
  autotune::store_softmax_calibration(backend::cpu::tuning_db_path(o), backend::cpu::device_key(o),
                                      {1023, schedule::kNeverWidth, 64});
  Graph mid = softmax_graph({Dim::fixed(5), Dim::fixed(2048)});
  std::vector<schedule::RowGroup> groups = schedule::find_row_groups(mid, std::vector<char>(mid.nodes.size(), 0),
                                                                     backend::cpu::fusion_target(mid, o));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].split_min_cols, 1024);
  SessionPair split = sessions(mid, o);
  expect_stats(split.compiled, {0, 1}, "calibrated, width 2048");
  expect_matches_reference(split, {{"x", rows_input(5, 2048, 6)}}, "calibrated split rows");

  Graph narrow = softmax_graph({Dim::fixed(9), Dim::fixed(48)});
  SessionPair library = sessions(narrow, o);
  expect_stats(library.compiled, {1, 0}, "calibrated, width 48");
  expect_matches_reference(library, {{"x", rows_input(9, 48, 7)}}, "calibrated short rows");
  // Without the calibration the same graph stays fused and keeps the default split width.
  expect_stats(sessions(narrow, options_with()).compiled, {0, 1}, "defaults, width 48");
  EXPECT_EQ(schedule::find_row_groups(mid, std::vector<char>(mid.nodes.size(), 0),
                                      backend::cpu::fusion_target(mid, options_with()))[0]
                .split_min_cols,
            32768);
}

TEST(RoutingEndToEnd, WideSoftmaxWithANeighbourSplitsIntoPointwiseAndLibrary) {
  Graph g = scaled_softmax_graph({Dim::fixed(5), Dim::fixed(40000)});
  SessionPair library = sessions(g, options_with({{"softmax_max_fuse_width", "4096"}}));
  expect_stats(library.compiled, {1, 0}, "eager Mul + library softmax");
  EXPECT_EQ(library.compiled.stats().kernels, 2);
  SessionPair fused = sessions(g, options_with());
  expect_stats(fused.compiled, {0, 1}, "Mul and Softmax in one kernel");
  EXPECT_EQ(fused.compiled.stats().kernels, 1);
  for (const SessionPair* s : {&library, &fused}) expect_matches_reference(*s, {{"x", rows_input(5, 40000, 5)}}, "scaled");
}

TEST(RoutingEndToEnd, LogSoftmaxOnEveryRoute) {
  Graph g = softmax_graph({Dim::sym("n"), Dim::sym("w")}, -1, true);
  SessionPair fused = sessions(g, options_with());
  SessionPair library = sessions(g, options_with({{"log_softmax_library_fallback", "1"}}));
  SessionPair eager = sessions(g, options_with({{"softmax_route", "eager"}}));
  expect_stats(fused.compiled, {0, 1}, "log fused");
  expect_stats(library.compiled, {1, 0}, "log library");
  expect_stats(eager.compiled, {0, 0}, "log eager");
  for (int64_t w : kWidths) {
    std::map<std::string, Tensor> in{{"x", rows_input(6, w, static_cast<uint32_t>(w))}};
    std::string at = " w=" + std::to_string(w);
    expect_matches_reference(fused, in, "log fused" + at);
    // oneDNN's log is not correctly rounded: LogSoftmax of a width-1 row is 1.4e-6, not 0.
    expect_matches_reference(library, in, "log library" + at, 2e-5, 1e-5);
    expect_matches_reference(eager, in, "log eager" + at);
  }
}

TEST(RoutingEndToEnd, MaskedSoftmaxOnEveryRoute) {
  Graph g = masked_softmax_graph(3, Dim::sym("seq"));
  SessionPair fused = sessions(g, options_with());
  SessionPair library = sessions(g, options_with({{"masked_softmax_library_fallback", "1"}}));
  SessionPair eager = sessions(g, options_with({{"softmax_route", "eager"}}));
  expect_stats(fused.compiled, {0, 1}, "masked fused: one kernel");
  EXPECT_EQ(fused.compiled.stats().kernels, 1);
  expect_stats(library.compiled, {1, -1}, "masked library: mask and guard apart");
  EXPECT_GE(library.compiled.stats().kernels, 3);
  expect_stats(eager.compiled, {0, -1}, "masked eager: the mask and guard still fuse");
  for (int64_t seq : {1, 7, 33}) {
    Tensor scores = random_with_specials({1, 3, seq, seq}, static_cast<uint32_t>(seq), seq > 3 ? 41 : 0);
    Tensor mask = Tensor::empty(DType::boolean, {1, 1, seq, seq});
    for (int64_t i = 0; i < seq * seq; ++i) mask.data<bool>()[i] = (i * 7 + i / seq) % 5 != 0;
    for (int64_t j = 0; j < seq; ++j) mask.data<bool>()[j] = false;  // row 0 fully masked: NaN, the guard gives 0
    std::map<std::string, Tensor> in{{"scores", scores}, {"mask", mask}};
    std::string at = " seq=" + std::to_string(seq);
    expect_matches_reference(fused, in, "masked fused" + at);
    expect_matches_reference(library, in, "masked library" + at);
    expect_matches_reference(eager, in, "masked eager" + at);
  }
}

TEST(RoutingEndToEnd, NonTrailingAxisIsEagerOrLibrary) {
  // [4, 9, 5] over axis 1: oneDNN's [outer, n, inner] path with inner 5; columns with NaN, +inf, all -inf.
  Graph g = softmax_graph({Dim::fixed(4), Dim::fixed(9), Dim::fixed(5)}, 1);
  SessionPair automatic = sessions(g, options_with());
  SessionPair library = sessions(g, options_with({{"softmax_route", "library"}}));
  expect_stats(automatic.compiled, {0, 0}, "axis 1 auto: eager");
  expect_stats(library.compiled, {1, 0}, "axis 1 library");
  Tensor x = random_with_specials({4, 9, 5}, 21, 23);
  for (int64_t i = 0; i < 9; ++i) x.data<float>()[2 * 45 + i * 5 + 3] = -INFINITY;  // column (2, ., 3) all -inf
  for (const SessionPair* s : {&automatic, &library}) expect_matches_reference(*s, {{"x", x}}, "axis 1");
  // Rank 1, and axis 0 of a matrix (outer 1).
  for (auto [shape, axis] : {std::pair<Shape, int>{{Dim::fixed(17)}, 0}, {{Dim::fixed(33), Dim::fixed(6)}, 0}}) {
    Graph h = softmax_graph(shape, axis);
    SessionPair s = sessions(h, options_with({{"softmax_route", "library"}}));
    expect_stats(s.compiled, {1, 0}, "library, small ranks");
    std::vector<int64_t> dims;
    for (const Dim& d : shape) dims.push_back(d.value);
    expect_matches_reference(s, {{"x", random_with_specials(dims, 31, 11)}}, "library small ranks");
  }
}

TEST(RoutingEndToEnd, F64CannotTakeTheLibraryAndStaysFused) {
  Graph g = softmax_graph({Dim::sym("n"), Dim::fixed(33)}, -1, false, DType::f64);
  SessionPair s = sessions(g, options_with({{"softmax_route", "library"}}));
  expect_stats(s.compiled, {0, 1}, "f64 with softmax_route=library");
  Tensor x = random_with_specials({6, 33}, 8, 30, DType::f64);
  add_special_rows(x, 6, 33);
  expect_matches_reference(s, {{"x", x}}, "f64", 1e-13, 1e-15);
}

}  // namespace
}  // namespace kiln::routing_test
