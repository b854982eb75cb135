// LogSoftmax followed by GatherElements / Gather of one column per row (NLL's pattern): one row kernel
// that reduces each row (max, sum of exp) and then reads only the gathered column. Checked through
// Session::from_graph (compiled against the fp64 reference) and find_row_groups; the kernel cache is
// private to this process.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "../routing/routing_test_util.h"
#include "schedule/fuse_rows.h"
#include "support/error.h"

namespace kiln::routing_test {
namespace {

// y = LogSoftmax(x [rows..., w]) gathered along the last axis. `elements`: GatherElements with idx
// [rows..., 1]; otherwise Gather with `gather_idx` (a constant, rank 0 or [1]). `also_output`: y is
// a graph output too.
struct LsgGraph {
  Shape x_shape;
  bool elements = true;
  DType idx_dtype = DType::i64;
  std::optional<Tensor> gather_idx = std::nullopt;
  bool also_output = false;
};

Graph lsg_graph(const LsgGraph& p) {
  GraphBuilder b("log_softmax_gather");
  ValueId x = b.input("x", DType::f32, p.x_shape);
  ValueId y = b.op(OpKind::LogSoftmax, {x}, {{"axis", -1}}, "lsm");
  ValueId idx;
  if (p.elements) {
    Shape is(p.x_shape.begin(), p.x_shape.end() - 1);
    is.push_back(Dim::fixed(1));
    idx = b.input("idx", p.idx_dtype, is);
  } else {
    idx = b.constant("idx", *p.gather_idx);
  }
  b.output(b.op(p.elements ? OpKind::GatherElements : OpKind::Gather, {y, idx}, {{"axis", -1}}, "gather"), "picked");
  if (p.also_output) b.output(y, "y");
  return inferred(b);
}

// Indices in [-w, w) (negative ones included), one per row.
Tensor random_indices(int64_t rows, int64_t w, uint32_t seed, DType dtype = DType::i64) {
  Tensor t = Tensor::empty(dtype, {rows, 1});
  std::mt19937 rng(seed);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t v = static_cast<int64_t>(rng() % static_cast<uint32_t>(2 * w)) - w;
    if (dtype == DType::i64) t.data<int64_t>()[r] = v;
    else t.data<int32_t>()[r] = static_cast<int32_t>(v);
  }
  return t;
}

Tensor rows_input(int64_t rows, int64_t w, uint32_t seed) {
  Tensor x = random_with_specials({rows, w}, seed, w > 3 ? 11 : 0);
  add_special_rows(x, rows, w);
  return x;
}

Tensor i64_tensor(std::vector<int64_t> dims, std::vector<int64_t> values) {
  Tensor t = Tensor::empty(DType::i64, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

void expect_one_fused_kernel(const Session& s, const std::string& what) {
  EXPECT_EQ(s.stats().kernels, 1) << what;
  EXPECT_EQ(s.stats().fused_kernels, 1) << what;
  EXPECT_EQ(s.stats().library_kernels, 0) << what;
}

TEST(LogSoftmaxGather, TheGroupEndsInTheGatherAndReadsOneColumnPerRow) {
  Graph g = lsg_graph({Shape{Dim::sym("n"), Dim::sym("w")}});
  std::vector<schedule::RowGroup> groups = schedule::find_row_groups(g, {}, backend::cpu::fusion_target(g, options_with()));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].nodes.size(), 2u);
  EXPECT_EQ(groups[0].output, g.outputs[0]);
  const loops::RowKernel& k = groups[0].kernel;
  EXPECT_EQ(k.output_kind, loops::RowOutput::rows);
  ASSERT_TRUE(k.gather_column.has_value());
  EXPECT_EQ(k.reductions.size(), 2u);
  EXPECT_NE(loops::to_string(k).find("col = load1[x0]"), std::string::npos) << loops::to_string(k);
}

TEST(LogSoftmaxGather, GatherElementsIsOneKernelAndMatchesTheReference) {
  // A symbolic width: one kernel for every width (1, odd, wide enough for the split path).
  SessionPair s = sessions(lsg_graph({Shape{Dim::sym("n"), Dim::sym("w")}}), options_with());
  expect_one_fused_kernel(s.compiled, "symbolic");
  for (int64_t w : {1, 2, 3, 17, 1000, 40000}) {
    for (int64_t rows : {1, 6, 9}) {
      if (w == 40000 && rows > 6) continue;
      uint32_t seed = static_cast<uint32_t>(w * 31 + rows);
      std::map<std::string, Tensor> in{{"x", rows_input(rows, w, seed)}, {"idx", random_indices(rows, w, seed)}};
      expect_matches_reference(s, in, "w=" + std::to_string(w) + " rows=" + std::to_string(rows));
    }
  }
  // Zero rows: nothing to do.
  std::map<std::string, Tensor> none{{"x", rows_input(0, 5, 1)}, {"idx", random_indices(0, 5, 1)}};
  EXPECT_EQ(s.compiled.run(none).at("picked").numel(), 0);
}

TEST(LogSoftmaxGather, StaticShapesRankThreeAndInt32Indices) {
  for (int64_t w : {1, 7}) {
    SessionPair s = sessions(lsg_graph({Shape{Dim::fixed(2), Dim::fixed(5), Dim::fixed(w)}, true, DType::i32}),
                             options_with());
    expect_one_fused_kernel(s.compiled, "rank 3, w=" + std::to_string(w));
    Tensor x = random_with_specials({2, 5, w}, 3, w > 3 ? 7 : 0);
    add_special_rows(x, 10, w);
    Tensor idx = random_indices(10, w, 4, DType::i32);
    idx = idx.reshaped({2, 5, 1});
    expect_matches_reference(s, {{"x", x}, {"idx", idx}}, "rank 3 w=" + std::to_string(w));
  }
}

TEST(LogSoftmaxGather, ConstantGatherOfOneColumn) {
  for (const Tensor& idx : {i64_tensor({}, {-2}), i64_tensor({1}, {3})}) {
    SessionPair s = sessions(lsg_graph({Shape{Dim::sym("n"), Dim::fixed(9)}, false, DType::i64, idx}), options_with());
    expect_one_fused_kernel(s.compiled, "Gather rank " + std::to_string(idx.rank()));
    expect_matches_reference(s, {{"x", rows_input(7, 9, 5)}}, "Gather rank " + std::to_string(idx.rank()));
  }
  // An out-of-range constant stays eager, which reports it.
  SessionPair bad = sessions(lsg_graph({Shape{Dim::sym("n"), Dim::fixed(9)}, false, DType::i64, i64_tensor({}, {9})}),
                             options_with());
  EXPECT_EQ(bad.compiled.stats().kernels, 2);
  EXPECT_THROW(bad.compiled.run({{"x", rows_input(3, 9, 6)}}), UserError);
}

TEST(LogSoftmaxGather, OutOfRangeRuntimeIndexGivesNaNForItsRow) {
  // Deviation from eager (a user error): a kernel cannot throw, so the row gets NaN and nothing out
  // of bounds is read.
  SessionPair s = sessions(lsg_graph({Shape{Dim::sym("n"), Dim::sym("w")}}), options_with());
  Tensor idx = i64_tensor({4, 1}, {5, -6, 1, -5});
  auto got = s.compiled.run({{"x", rows_input(4, 5, 8)}, {"idx", idx}}).at("picked");
  EXPECT_TRUE(std::isnan(got.as_double(0)));
  EXPECT_TRUE(std::isnan(got.as_double(1)));
  EXPECT_THROW(s.reference.run({{"x", rows_input(4, 5, 8)}, {"idx", idx}}), UserError);
}

TEST(LogSoftmaxGather, UsedElsewhereTheLogSoftmaxIsNotAbsorbed) {
  SessionPair s = sessions(lsg_graph({Shape{Dim::sym("n"), Dim::sym("w")}, true, DType::i64, {}, true}), options_with());
  EXPECT_EQ(s.compiled.stats().kernels, 2);
  EXPECT_EQ(s.compiled.stats().fused_kernels, 1);
  for (int64_t w : {1, 17})
    expect_matches_reference(s, {{"x", rows_input(6, w, 9)}, {"idx", random_indices(6, w, 10)}},
                             "shared w=" + std::to_string(w));
}

TEST(LogSoftmaxGather, LibraryFallbackLeavesThePairToLibraryAndEager) {
  SessionPair s = sessions(lsg_graph({Shape{Dim::sym("n"), Dim::sym("w")}}),
                           options_with({{"log_softmax_library_fallback", "1"}}));
  EXPECT_EQ(s.compiled.stats().kernels, 2);
  EXPECT_EQ(s.compiled.stats().library_kernels, 1);
  EXPECT_EQ(s.compiled.stats().fused_kernels, 0);
  for (int64_t w : {1, 17, 1000})
    // oneDNN's log is not correctly rounded (routing_e2e_test's tolerance).
    expect_matches_reference(s, {{"x", rows_input(6, w, 11)}, {"idx", random_indices(6, w, 12)}},
                             "library w=" + std::to_string(w), 2e-5, 1e-5);
}

}  // namespace
}  // namespace kiln::routing_test
