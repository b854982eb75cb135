// Range analysis, proofs and every simplification rule; the size-1 rule (a term is dropped only
// when it is proven zero) gets its own cases.
#include <gtest/gtest.h>

#include "loops/index_expr.h"
#include "loops/index_layout.h"

namespace kiln::loops {
namespace {

Expr V(const char* name, Expr extent) { return Expr::var(name, std::move(extent)); }

TEST(IndexBounds, Intervals) {
  Expr x = V("x", 8), y = V("y", 3);
  Expr S = Expr::sym("S", 64, 1);
  EXPECT_EQ(bounds(x), (Bounds{0, 7}));
  EXPECT_EQ(bounds(x * 2 - y), (Bounds{-2, 14}));
  EXPECT_EQ(bounds(S), (Bounds{1, kPosInf}));
  EXPECT_EQ(bounds(Expr::sym("Z")), (Bounds{0, kPosInf}));
  EXPECT_EQ(bounds(V("v", S)), (Bounds{0, kPosInf}));  // hint 64 is not a bound
  EXPECT_EQ(bounds(floordiv(x - 4, 3)), (Bounds{-2, 1}));
  EXPECT_EQ(bounds(mod(x, 5)), (Bounds{0, 4}));
  EXPECT_EQ(bounds(mod(x + 8, 16)), (Bounds{8, 15}));  // one period
  EXPECT_EQ(bounds(mod(x, S)), (Bounds{0, 7}));
  EXPECT_EQ(bounds(floordiv(x, S)), (Bounds{0, 7}));
  EXPECT_EQ(bounds(minimum(x, y)), (Bounds{0, 2}));
  EXPECT_EQ(bounds(maximum(x, y - 5)), (Bounds{0, 7}));
  EXPECT_EQ(bounds(-S), (Bounds{kNegInf, -1}));
}

TEST(IndexProofs, SymbolicRanges) {
  Expr H = Expr::sym("H"), W = Expr::sym("W");
  Expr h = V("h", H), w = V("w", W);
  EXPECT_TRUE(prove_lt(h, H));
  EXPECT_TRUE(prove_lt(h * W + w, H * W));  // eliminates w at W - 1, then h at H - 1
  EXPECT_FALSE(prove_lt(h * W + w, H * W - 1));
  EXPECT_TRUE(prove_lt(mod(h, W), W));
  EXPECT_TRUE(prove_le(mod(h, W), h));
  EXPECT_TRUE(prove_lt(floordiv(V("f", H * W), W), H));
  EXPECT_TRUE(prove_nonneg(h - floordiv(h, 4) * 4));  // h % 4 in disguise
  EXPECT_TRUE(prove_nonneg(floordiv(h, W)));
  EXPECT_FALSE(prove_nonneg(h - 1));
  EXPECT_FALSE(prove_lt(h, W));
  EXPECT_TRUE(prove_le(minimum(h, w), h));
  EXPECT_TRUE(prove_le(w, maximum(h, w)));
}

TEST(IndexSimplify, FloorDivAndModInRange) {
  Expr x = V("x", 16), y = V("y", 4);
  Expr N = Expr::sym("N"), n = V("n", N);
  EXPECT_EQ(simplify(floordiv(x, 16)), Expr(0));
  EXPECT_EQ(simplify(mod(x, 16)), x);
  EXPECT_EQ(simplify(floordiv(x, 17)), Expr(0));
  EXPECT_EQ(simplify(mod(x, 15)), mod(x, 15));  // x = 15 wraps
  EXPECT_EQ(simplify(floordiv(n, N)), Expr(0));
  EXPECT_EQ(simplify(mod(n, N)), n);
  EXPECT_EQ(simplify(floordiv(x + 16, 16)), Expr(1));   // one period
  EXPECT_EQ(simplify(mod(x + 16, 16)), x);
  EXPECT_EQ(simplify(floordiv(x - 16, 16)), Expr(-1));
  EXPECT_EQ(simplify(mod(x - 16, 16)), x);
  EXPECT_EQ(simplify(floordiv(x * 4 + y, 4)), x);       // (a*n + b) // n with 0 <= b < n
  EXPECT_EQ(simplify(mod(x * 4 + y, 4)), y);
  EXPECT_EQ(simplify(floordiv(n * 4 + y, 4)), n);
  EXPECT_EQ(simplify(floordiv(V("a", 5) * N + n, N)), V("a", 5));
  EXPECT_EQ(simplify(mod(V("a", 5) * N + n, N)), n);
  EXPECT_EQ(simplify(floordiv(x * 4 + y + 1, 4)), x + floordiv(y + 1, 4));  // y + 1 may reach 4
  EXPECT_EQ(simplify(floordiv(x - 1, 16)), floordiv(x - 1, 16));            // may be -1
  // k | n split: (q*k + r) // n = q // (n/k) and (q*k + r) % n = k*(q % (n/k)) + r, 0 <= r < k.
  EXPECT_EQ(simplify(floordiv(x * 4 + y, 32)), floordiv(x, 8));
  EXPECT_EQ(simplify(mod(x * 4 + y, 32)), mod(x, 8) * 4 + y);
  Expr n4 = V("n4", N * 4);
  EXPECT_EQ(simplify(floordiv(n4 * 4 + y, N * 8)), floordiv(n4, N * 2));
  EXPECT_EQ(simplify(mod(n4 * 4 + y, N * 8)), mod(n4, N * 2) * 4 + y);
  EXPECT_EQ(simplify(floordiv(n * 4 + y, N * 8)), Expr(0));  // n < N, so n*4 + y < 8*N
}

TEST(IndexSimplify, NestedAndUnitDivisors) {
  Expr x = V("x", 1000);
  EXPECT_EQ(simplify(floordiv(floordiv(x, 4), 5)), floordiv(x, 20));
  EXPECT_EQ(simplify(mod(x, 1)), Expr(0));
  EXPECT_EQ(simplify(floordiv(x, 1)), x);
  EXPECT_EQ(simplify(mod(mod(x, 8), 16)), mod(x, 8));  // the inner result is already < 16
}

TEST(IndexSimplify, MinMax) {
  Expr x = V("x", 16), S = Expr::sym("S");
  EXPECT_EQ(simplify(minimum(x, 16)), x);
  EXPECT_EQ(simplify(maximum(x, 0)), x);
  EXPECT_EQ(simplify(minimum(x, 15)), x);
  EXPECT_EQ(simplify(minimum(x, 10)), minimum(x, 10));
  EXPECT_EQ(simplify(minimum(V("v", S), S)), V("v", S));
  EXPECT_EQ(simplify(maximum(V("v", S), S)), S);
}

TEST(IndexSimplify, RecombinesDivisionAndModulo) {
  Expr x = V("x", 1000), S = Expr::sym("S", -1, 1);
  EXPECT_EQ(simplify(floordiv(x, 4) * 4 + mod(x, 4)), x);
  EXPECT_EQ(simplify(floordiv(x, S) * S + mod(x, S)), x);
  EXPECT_EQ(simplify(floordiv(x, 4) * 8 + mod(x, 4) * 2 + 1), x * 2 + 1);
  EXPECT_EQ(simplify(floordiv(x, 4) * 4 + mod(x, 8)), floordiv(x, 4) * 4 + mod(x, 8));
}

TEST(IndexSimplify, PointRangesBecomeConstants) {
  EXPECT_EQ(simplify(V("z", 1)), Expr(0));
  EXPECT_EQ(simplify(V("z", 1) * 768 + V("x", 4)), V("x", 4));
  EXPECT_EQ(simplify(mod(V("x", 4), 4) * 0 + 3), Expr(3));
}

// --- The size-1 rule -------------------------------------------------------------------------
// A term may only disappear when its value is proven zero. An output of shape [M, 1] stored from a
// tile n in [0, BLOCK_N) (lanes n >= 1 masked off) must keep its n term: dropping it would make every
// lane alias element m, which is the real bug this rule comes from.

TEST(IndexSizeOne, TileVariableThroughSizeOneDimIsKept) {
  Expr M = Expr::sym("M", 64, 1);
  Expr m = V("m", M), n = V("n", 16);  // n: a tile [0, BLOCK_N), BLOCK_N = 16, mask n < 1
  std::vector<Expr> strides = row_major_strides({M, Expr(1)});
  EXPECT_EQ(strides[0], Expr(1));  // stride of a size-1 dim is its true stride, not 0
  EXPECT_EQ(strides[1], Expr(1));
  Expr idx = simplify(linear_index({m, n}, strides));
  EXPECT_EQ(idx, m + n);
  EXPECT_TRUE(depends_on(idx, n));
  EXPECT_EQ(evaluate(idx, {{"m", 5}, {"n", 3}}), 8);  // masked lane 3 keeps its own address
}

TEST(IndexSizeOne, SymbolicExtentIsNotZeroEvenWithHintOne) {
  Expr one_hint = Expr::sym("BLOCK_N", /*hint=*/1, /*min_value=*/1);
  Expr n = V("n", one_hint);
  Expr m = V("m", 8);
  EXPECT_EQ(simplify(n), n);
  EXPECT_EQ(simplify(m + n), m + n);
  EXPECT_EQ(simplify(n * 768), n * 768);
  EXPECT_EQ(simplify(floordiv(n, 1)), n);
  // A division by a symbol with hint 1 is not a division by 1.
  Expr S = Expr::sym("S", /*hint=*/1);
  EXPECT_EQ(simplify(floordiv(m, S)), floordiv(m, S));
  EXPECT_EQ(simplify(mod(m, S)), mod(m, S));
  // The hint never changes the result.
  Expr no_hint = Expr::sym("BLOCK_N", -1, 1);
  EXPECT_EQ(simplify(m * 4 + V("n", no_hint)), simplify(m * 4 + n));
  EXPECT_EQ(to_string(simplify(m * 4 + V("n", no_hint))), to_string(simplify(m * 4 + n)));
}

TEST(IndexSizeOne, ExtentOneIsZero) {
  Expr n = V("n", 1);  // a variable of extent exactly 1 is always 0
  Expr m = V("m", 8);
  EXPECT_EQ(simplify(m * 1 + n), m);
  EXPECT_FALSE(depends_on(simplify(m * 1 + n), n));
  // An extent that only becomes 1 after binding a symbol: 0 once bound, kept before.
  Expr K = Expr::sym("K", 1, 1);
  Expr k = V("k", K);
  EXPECT_EQ(simplify(m + k), m + k);
  ExprMap<Expr> bind;
  bind[K] = Expr(1);
  EXPECT_EQ(simplify(substitute(m + k, bind)), m);
}

TEST(IndexSizeOne, BlockIndexFlowingThroughSizeOneDim) {
  // n = pid * BLOCK + lane, flowing into dim 1 of an [M, 1] output.
  Expr M = Expr::sym("M", -1, 1), G = Expr::sym("G", 1, 1);
  Expr m = V("m", M), lane = V("lane", 16);
  Expr pid = V("pid", G);  // grid size known only at run time
  Expr idx = simplify(linear_index({m, pid * 16 + lane}, row_major_strides({M, Expr(1)})));
  EXPECT_TRUE(depends_on(idx, pid));
  EXPECT_TRUE(depends_on(idx, lane));
  EXPECT_EQ(idx, m + pid * 16 + lane);
  // With a grid of exactly one block, pid is proven 0 and only that term goes.
  Expr pid1 = V("pid", 1);
  Expr idx1 = simplify(linear_index({m, pid1 * 16 + lane}, row_major_strides({M, Expr(1)})));
  EXPECT_EQ(idx1, m + lane);
}

TEST(IndexSizeOne, BroadcastReadUsesStrideZero) {
  Expr M = Expr::sym("M", -1, 1), N = Expr::sym("N", -1, 1);
  Expr m = V("m", M), n = V("n", N);
  // [1, N] read from an [M, N] loop: m's stride is a real 0.
  std::vector<Expr> s = broadcast_strides({Expr(1), N}, {M, N});
  EXPECT_EQ(s[0], Expr(0));
  EXPECT_EQ(s[1], Expr(1));
  EXPECT_EQ(simplify(broadcast_index({m, n}, {Expr(1), N}, {M, N})), n);
  // [M, 1] read from an [M, N] loop: n's stride is 0, m keeps stride 1.
  EXPECT_EQ(simplify(broadcast_index({m, n}, {M, Expr(1)}, {M, N})), m);
  // A symbolic input dim is never assumed to be 1, whatever its hint.
  Expr maybe_one = Expr::sym("P", /*hint=*/1, 1);
  EXPECT_EQ(simplify(broadcast_index({m, n}, {maybe_one, N}, {M, N})), m * N + n);
}

TEST(IndexSizeOne, DelinearizedSizeOneDimIsProvenZero) {
  // For a flat index over [M, 1], the index of the size-1 dim is flat % 1: proven 0, not assumed.
  Expr M = Expr::sym("M", -1, 1);
  Expr f = V("f", M);
  auto idx = delinearize(f, {M, Expr(1)});
  EXPECT_EQ(idx[0], f);
  EXPECT_EQ(idx[1], Expr(0));
}

}  // namespace
}  // namespace kiln::loops
