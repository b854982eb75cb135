// Strides, broadcast reads and flat-index decomposition.
#include <gtest/gtest.h>

#include <random>

#include "kiln/graph.h"
#include "loops/index_layout.h"
#include "support/error.h"

namespace kiln::loops {
namespace {

Expr V(const char* name, Expr extent) { return Expr::var(name, std::move(extent)); }

TEST(IndexLayout, RowMajorStridesOverSymbols) {
  Shape shape = {Dim::sym("batch", 8), Dim::fixed(12), Dim::sym("seq", 128), Dim::fixed(64)};
  std::vector<Expr> sizes = sizes_of(shape);
  ASSERT_EQ(sizes.size(), 4u);
  EXPECT_TRUE(sizes[0].is_sym());
  EXPECT_EQ(sizes[0].hint(), 8);
  EXPECT_EQ(sizes[1], Expr(12));
  Expr seq = sizes[2];
  auto strides = row_major_strides(sizes);
  EXPECT_EQ(strides[3], Expr(1));
  EXPECT_EQ(strides[2], Expr(64));
  EXPECT_EQ(strides[1], seq * 64);
  EXPECT_EQ(strides[0], seq * 768);
  EXPECT_EQ(to_cpp(strides[0]), "(seq * 768)");
  Expr x0 = V("x0", sizes[0]), x1 = V("x1", 12), x2 = V("x2", seq), x3 = V("x3", 64);
  Expr idx = linear_index({x0, x1, x2, x3}, strides);
  EXPECT_EQ(to_cpp(idx), "(x0 * seq * 768 + x1 * seq * 64 + x2 * 64 + x3)");
  EXPECT_EQ(evaluate(idx, {{"x0", 1}, {"x1", 2}, {"x2", 3}, {"x3", 4}, {"seq", 10}}),
            768 * 10 + 2 * 640 + 3 * 64 + 4);
  EXPECT_THROW(linear_index({x0}, strides), InternalError);
}

TEST(IndexLayout, BroadcastStrides) {
  Expr N = Expr::sym("N", -1, 1);
  // [3, 1] into [2, 3, 4]: the missing leading dim and the size-1 dim read with stride 0.
  auto s = broadcast_strides({Expr(3), Expr(1)}, {Expr(2), Expr(3), Expr(4)});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], Expr(0));
  EXPECT_EQ(s[1], Expr(1));
  EXPECT_EQ(s[2], Expr(0));
  auto t = broadcast_strides({N}, {Expr(5), N});
  EXPECT_EQ(t[0], Expr(0));
  EXPECT_EQ(t[1], Expr(1));
  EXPECT_THROW(broadcast_strides({Expr(3)}, {Expr(4)}), InternalError);
  EXPECT_THROW(broadcast_strides({Expr(3), Expr(4)}, {Expr(4)}), InternalError);
  Expr i = V("i", 2), j = V("j", 3), k = V("k", 4);
  EXPECT_EQ(broadcast_index({i, j, k}, {Expr(3), Expr(1)}, {Expr(2), Expr(3), Expr(4)}), j);
}

void expect_round_trip(const std::vector<Expr>& sizes, const Expr& numel,
                       const std::unordered_map<std::string, int64_t>& sym_values) {
  Expr f = V("f", numel);
  auto idx = delinearize(f, sizes);
  Expr back = simplify(linear_index(idx, row_major_strides(sizes)));
  EXPECT_EQ(back, simplify(f)) << to_string(back);  // f itself, or 0 when numel is 1
  // Brute force: the decomposition matches the digits of f in the mixed radix.
  auto env = sym_values;
  std::vector<int64_t> dims;
  for (const Expr& s : sizes) dims.push_back(evaluate(s, env));
  int64_t total = evaluate(numel, env);
  for (int64_t v = 0; v < total; ++v) {
    env["f"] = v;
    int64_t rest = v;
    for (size_t d = dims.size(); d-- > 0;) {
      ASSERT_EQ(evaluate(idx[d], env), rest % dims[d]) << to_string(idx[d]) << " at f=" << v;
      rest /= dims[d];
    }
  }
}

TEST(IndexLayout, DelinearizeRoundTrips) {
  expect_round_trip({Expr(2), Expr(3), Expr(4)}, Expr(24), {});
  expect_round_trip({Expr(5), Expr(1), Expr(3)}, Expr(15), {});
  Expr A = Expr::sym("A", -1, 1), B = Expr::sym("B", -1, 1), C = Expr::sym("C", -1, 1);
  expect_round_trip({A, B, C}, A * B * C, {{"A", 2}, {"B", 3}, {"C", 4}});
  expect_round_trip({A, Expr(1), Expr(6), C}, A * C * 6, {{"A", 3}, {"C", 2}});
  // The digits are as simple as the ranges allow.
  Expr f = V("f", Expr(24));
  auto idx = delinearize(f, {Expr(2), Expr(3), Expr(4)});
  EXPECT_EQ(idx[0], floordiv(f, 12));
  EXPECT_EQ(idx[1], mod(floordiv(f, 4), 3));
  EXPECT_EQ(idx[2], mod(f, 4));
  // A flat index built from loop variables decomposes back into them.
  Expr b = V("b", A), c = V("c", C);
  auto digits = delinearize(b * C + c, {A, C});
  EXPECT_EQ(digits[0], b);
  EXPECT_EQ(digits[1], c);
}

TEST(IndexLayout, RandomShapesRoundTrip) {
  std::mt19937 rng(99);
  Expr A = Expr::sym("A", -1, 1), B = Expr::sym("B", 1, 1);
  std::vector<Expr> choices = {Expr(1), Expr(2), Expr(3), A, B};
  for (int i = 0; i < 150; ++i) {
    std::vector<Expr> sizes(1 + rng() % 4);
    for (Expr& s : sizes) s = choices[rng() % choices.size()];
    std::unordered_map<std::string, int64_t> values = {{"A", 1 + static_cast<int64_t>(rng() % 3)},
                                                        {"B", 1 + static_cast<int64_t>(rng() % 2)}};
    expect_round_trip(sizes, mul(sizes), values);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace kiln::loops
