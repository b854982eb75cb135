// Canonical constructors, identity (hash, equality, order), substitution, evaluation, free variables.
#include <gtest/gtest.h>

#include "loops/index_expr.h"
#include "support/error.h"

namespace kiln::loops {
namespace {

Expr V(const char* name, Expr extent) { return Expr::var(name, std::move(extent)); }

TEST(IndexCanonical, ConstantsFold) {
  EXPECT_EQ(Expr(2) + Expr(3), Expr(5));
  EXPECT_EQ(Expr(6) * Expr(7), Expr(42));
  EXPECT_EQ(floordiv(Expr(-7), Expr(2)), Expr(-4));  // floor, not truncation
  EXPECT_EQ(mod(Expr(-7), Expr(2)), Expr(1));
  EXPECT_EQ(floordiv(Expr(7), Expr(2)), Expr(3));
  EXPECT_EQ(minimum(Expr(3), Expr(-1)), Expr(-1));
  EXPECT_EQ(maximum(Expr(3), Expr(-1)), Expr(3));
  EXPECT_TRUE(Expr().is_const(0));
}

TEST(IndexCanonical, SumsFlattenSortAndCombine) {
  Expr x = V("x", 8), y = V("y", 8);
  EXPECT_EQ((x + y) + x, x * 2 + y);
  EXPECT_EQ(x * 3 + y - x * 3, y);                  // c1*x + c2*x with c1 + c2 = 0
  EXPECT_EQ(y + x, x + y);                          // order-independent
  EXPECT_EQ(add({x, Expr(1), add({y, Expr(2)})}), x + y + 3);
  Expr s = x + y + 3;
  ASSERT_EQ(s.kind(), ExprKind::Add);
  ASSERT_EQ(s.operands().size(), 3u);
  EXPECT_EQ(s.operands()[0], x);
  EXPECT_EQ(s.operands()[1], y);
  EXPECT_EQ(s.operands()[2], Expr(3));  // the constant last
  EXPECT_EQ(x - x, Expr(0));
  EXPECT_EQ(x + 0, x);
}

TEST(IndexCanonical, ProductsFoldAndExpand) {
  Expr x = V("x", 8), y = V("y", 8);
  Expr S = Expr::sym("S");
  EXPECT_EQ(x * 0, Expr(0));
  EXPECT_EQ(x * 1, x);
  EXPECT_EQ((x * 2) * 3, x * 6);
  EXPECT_EQ(x * S, S * x);
  EXPECT_EQ((x + y) * 2, x * 2 + y * 2);       // constants distribute
  EXPECT_EQ((x + 1) * S, x * S + S);           // so do symbols: sums of monomials
  EXPECT_EQ(x * S * 2 + x * S * 3, x * S * 5);  // like terms with symbolic strides
  Expr p = x * S * 4;
  ASSERT_EQ(p.kind(), ExprKind::Mul);
  EXPECT_EQ(p.operands().front(), x);  // variables before symbols, the coefficient last
  EXPECT_EQ(p.operands().back(), Expr(4));
  EXPECT_EQ(-(-x), x);
}

TEST(IndexCanonical, DivisionIdentities) {
  Expr x = V("x", 100), y = V("y", 100);
  Expr S = Expr::sym("S", -1, 1);
  EXPECT_EQ(floordiv(x, 1), x);
  EXPECT_EQ(mod(x, 1), Expr(0));
  EXPECT_EQ(floordiv(x, x), Expr(1));
  EXPECT_EQ(mod(S, S), Expr(0));
  EXPECT_EQ(floordiv(floordiv(x, 4), 8), floordiv(x, 32));                  // nested
  EXPECT_EQ(floordiv(floordiv(x, S), 3), floordiv(x, S * 3));
  EXPECT_EQ(floordiv(x * 8 + y, 4), x * 2 + floordiv(y, 4));                // pulled out exactly
  EXPECT_EQ(floordiv(x * S + y, S), x + floordiv(y, S));
  EXPECT_EQ(mod(x * 8 + y, 4), mod(y, 4));
  EXPECT_EQ(mod(x * S + y, S), mod(y, S));
  EXPECT_EQ(floordiv(x * 6 + y * 4, 8), floordiv(x * 3 + y * 2, 4));        // common factor
  EXPECT_EQ(mod(x * 6 + y * 4, 8), mod(x * 3 + y * 2, 4) * 2);
  EXPECT_EQ(floordiv(x * S, S * 4), floordiv(x, 4));
  EXPECT_EQ(mod(mod(x, 12), 4), mod(x, 4));                                 // 4 | 12
  EXPECT_NE(mod(mod(x, 12), 5), mod(x, 5));
  EXPECT_EQ(ceildiv(x, 4), floordiv(x + 3, 4));
  EXPECT_THROW(floordiv(x, 0), InternalError);
  EXPECT_THROW(mod(x, -3), InternalError);
}

TEST(IndexCanonical, HashEqualityAndOrder) {
  Expr a = V("x1", 4) * 768 + V("x2", 768);
  Expr b = V("x2", 768) + V("x1", 4) * 768;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(compare(a, b), 0);
  // Symbols are identified by name and minimum; the hint is advice, not identity.
  EXPECT_EQ(Expr::sym("seq", 128), Expr::sym("seq", 7));
  EXPECT_NE(Expr::sym("seq", -1, 0), Expr::sym("seq", -1, 1));
  // Variables by name and extent.
  EXPECT_NE(V("x", 4), V("x", 5));
  EXPECT_NE(V("x", 4), V("y", 4));
  // Natural order of names.
  EXPECT_LT(V("x2", 4), V("x10", 4));
  EXPECT_LT(V("x10", 4), V("y", 4));
  ExprMap<int> m;
  m[a] = 1;
  EXPECT_EQ(m.count(b), 1u);
  // Deterministic hash: the same structure hashes alike however it was built.
  EXPECT_EQ((V("x", 3) + 1).hash(), add({Expr(1), V("x", 3)}).hash());
}

TEST(IndexCanonical, SubstituteEvaluateFreeVars) {
  Expr N = Expr::sym("N", 16, 1);
  Expr x = V("x", N), y = V("y", 4);
  Expr e = x * 4 + y + floordiv(x, 3);
  EXPECT_EQ(evaluate(e, {{"x", 7}, {"y", 2}}), 7 * 4 + 2 + 2);
  EXPECT_THROW(evaluate(e, {{"x", 7}}), InternalError);  // y missing
  ExprMap<Expr> r;
  r[y] = Expr(1);
  r[x] = V("t", 2) * 8;
  Expr s = substitute(e, r);
  EXPECT_EQ(s, V("t", 2) * 32 + 1 + floordiv(V("t", 2) * 8, 3));
  // Substituting a symbol rewrites the extents of variables that use it.
  ExprMap<Expr> bind;
  bind[N] = Expr(10);
  Expr bound = substitute(x + N, bind);
  EXPECT_EQ(bound, V("x", 10) + 10);
  auto vars = free_vars(e);
  ASSERT_EQ(vars.size(), 2u);
  EXPECT_EQ(vars[0], x);
  EXPECT_EQ(vars[1], y);
  auto syms = free_syms(e);  // N occurs only as x's extent
  ASSERT_EQ(syms.size(), 1u);
  EXPECT_EQ(syms[0], N);
  EXPECT_TRUE(depends_on(e, y));
  EXPECT_FALSE(depends_on(e, V("z", 4)));
  EXPECT_EQ(evaluate(mod(Expr(-7) + x, 3), {{"x", 0}}), 2);
  EXPECT_EQ(evaluate(minimum(x, y), {{"x", 7}, {"y", 2}}), 2);
  EXPECT_EQ(evaluate(maximum(x, y), {{"x", 7}, {"y", 2}}), 7);
}

TEST(IndexCanonical, ConstantOverflowIsReported) {
  Expr big(INT64_MAX);
  EXPECT_THROW(big + 1, UserError);
  EXPECT_THROW(big * 2, UserError);
  EXPECT_THROW(evaluate(V("x", 4) * INT64_MAX, {{"x", 3}}), UserError);
}

}  // namespace
}  // namespace kiln::loops
