// Brute force: random expressions over 2-3 variables with small ranges (one of them with a symbolic
// extent) are checked at every point of their ranges. The canonical constructors and simplify()
// must agree with a plain reference evaluation of the generating tree; bounds() must contain every
// value; a proof of non-negativity must never be wrong.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>

#include "loops/index_expr.h"

namespace kiln::loops {
namespace {

int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The generating tree, evaluated independently of Expr.
struct Ref {
  enum Op { Const, Leaf, Add, Sub, Mul, Div, Mod, Min, Max } op = Const;
  int64_t value = 0;  // Const
  int leaf = 0;       // Leaf: index into the point
  std::unique_ptr<Ref> a, b;

  int64_t eval(const int64_t* point) const {
    switch (op) {
      case Const: return value;
      case Leaf: return point[leaf];
      case Add: return a->eval(point) + b->eval(point);
      case Sub: return a->eval(point) - b->eval(point);
      case Mul: return a->eval(point) * b->eval(point);
      case Div: return py_floordiv(a->eval(point), b->eval(point));
      case Mod: {
        int64_t x = a->eval(point), n = b->eval(point);
        return x - py_floordiv(x, n) * n;
      }
      case Min: return std::min(a->eval(point), b->eval(point));
      case Max: return std::max(a->eval(point), b->eval(point));
    }
    return 0;
  }
};

struct Generated {
  std::unique_ptr<Ref> ref;
  Expr expr;
};

class Generator {
 public:
  Generator(std::mt19937& rng, std::vector<Expr> leaves) : rng_(rng), leaves_(std::move(leaves)) {}

  Generated make(int depth) {
    if (depth == 0 || pick(5) == 0) return pick(3) == 0 ? constant(pick(13) - 6) : leaf(pick(n_leaves()));
    int choice = pick(12);
    if (choice <= 1) return binary(Ref::Add, make(depth - 1), make(depth - 1));
    if (choice == 2) return binary(Ref::Sub, make(depth - 1), make(depth - 1));
    if (choice == 3) return binary(Ref::Mul, make(depth - 1), constant(pick(9) - 3));
    if (choice == 4) return binary(Ref::Mul, make(depth - 1), make(depth - 1));
    if (choice <= 6) return binary(Ref::Div, make(depth - 1), divisor());
    if (choice <= 8) return binary(Ref::Mod, make(depth - 1), divisor());
    if (choice == 9) return binary(Ref::Min, make(depth - 1), make(depth - 1));
    if (choice == 10) return binary(Ref::Max, make(depth - 1), make(depth - 1));
    // An index-like shape: a*k + b with a small non-negative b, then divided or reduced.
    int k = pick(6) + 1;
    Generated lin = binary(Ref::Add, binary(Ref::Mul, make(depth - 1), constant(k)), leaf(pick(n_leaves())));
    return binary(pick(2) ? Ref::Div : Ref::Mod, std::move(lin), pick(2) ? constant(k * (pick(3) + 1)) : divisor());
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<unsigned>(n)); }
  int n_leaves() const { return static_cast<int>(leaves_.size()); }

  Generated constant(int64_t v) {
    auto r = std::make_unique<Ref>();
    r->value = v;
    return {std::move(r), Expr(v)};
  }
  Generated leaf(int i) {
    auto r = std::make_unique<Ref>();
    r->op = Ref::Leaf;
    r->leaf = i;
    return {std::move(r), leaves_[static_cast<size_t>(i)]};
  }
  // Always positive: a constant, the symbol (minimum 1), twice it, or a variable plus one.
  Generated divisor() {
    switch (pick(5)) {
      case 0: return binary(Ref::Mul, leaf(n_leaves() - 1), constant(2));
      case 1: return binary(Ref::Add, leaf(pick(n_leaves() - 1)), constant(1));
      case 2: return leaf(n_leaves() - 1);
      default: return constant(pick(6) + 1);
    }
  }
  static Generated binary(Ref::Op op, Generated a, Generated b) {
    Expr e;
    switch (op) {
      case Ref::Add: e = a.expr + b.expr; break;
      case Ref::Sub: e = a.expr - b.expr; break;
      case Ref::Mul: e = a.expr * b.expr; break;
      case Ref::Div: e = floordiv(a.expr, b.expr); break;
      case Ref::Mod: e = mod(a.expr, b.expr); break;
      case Ref::Min: e = minimum(a.expr, b.expr); break;
      case Ref::Max: e = maximum(a.expr, b.expr); break;
      default: break;
    }
    auto r = std::make_unique<Ref>();
    r->op = op;
    r->a = std::move(a.ref);
    r->b = std::move(b.ref);
    return {std::move(r), e};
  }

  std::mt19937& rng_;
  std::vector<Expr> leaves_;
};

TEST(IndexProperty, SimplifyPreservesValuesEverywhere) {
  // KILN_LOOPS_SEED / KILN_LOOPS_EXPRS widen the search when hunting a bug.
  const char* seed = std::getenv("KILN_LOOPS_SEED");
  const char* count = std::getenv("KILN_LOOPS_EXPRS");
  std::mt19937 rng(seed ? static_cast<unsigned>(std::atoi(seed)) : 12345u);
  Expr S = Expr::sym("S", /*hint=*/1, /*min_value=*/1);
  int simplified_smaller = 0, proofs = 0;
  const int kExprs = count ? std::atoi(count) : 3000;
  for (int i = 0; i < kExprs; ++i) {
    // Extents 1..5 (1 exercises the proven-zero case); z runs over [0, S).
    int64_t ex = 1 + static_cast<int64_t>(rng() % 5), ey = 1 + static_cast<int64_t>(rng() % 5);
    Expr x = Expr::var("x", ex), y = Expr::var("y", ey), z = Expr::var("z", S);
    bool three = i % 2 == 0;
    std::vector<Expr> leaves = three ? std::vector<Expr>{x, y, z, S} : std::vector<Expr>{x, y, S};
    Generator gen(rng, leaves);
    Generated g = gen.make(1 + i % 4);
    Expr simple = simplify(g.expr);
    ASSERT_EQ(simplify(simple), simple) << "not a fixed point: " << to_string(g.expr);
    if (to_string(simple).size() < to_string(g.expr).size()) ++simplified_smaller;
    Bounds b = bounds(g.expr);
    bool nonneg = prove_nonneg(g.expr);
    proofs += nonneg;
    (void)to_cpp(simple);
    if (std::getenv("KILN_LOOPS_VERBOSE") && i % 150 == 0)
      std::printf("%s\n  -> %s\n", to_string(g.expr).c_str(), to_string(simple).c_str());

    for (int64_t s = 1; s <= 3; ++s)
      for (int64_t vx = 0; vx < ex; ++vx)
        for (int64_t vy = 0; vy < ey; ++vy)
          for (int64_t vz = 0; vz < (three ? s : 1); ++vz) {
            int64_t point[4] = {vx, vy, three ? vz : s, s};
            std::unordered_map<std::string, int64_t> env = {{"x", vx}, {"y", vy}, {"z", vz}, {"S", s}};
            int64_t want = g.ref->eval(point);
            auto where = [&] {
              return "expr " + to_string(g.expr) + " simplified " + to_string(simple) + " at x=" +
                     std::to_string(vx) + " y=" + std::to_string(vy) + " z=" + std::to_string(vz) +
                     " S=" + std::to_string(s);
            };
            ASSERT_EQ(evaluate(g.expr, env), want) << where();
            ASSERT_EQ(evaluate(simple, env), want) << where();
            ASSERT_LE(b.lo, want) << where();
            ASSERT_GE(b.hi, want) << where();
            if (nonneg) {
              ASSERT_GE(want, 0) << "wrong proof: " << where();
            }
          }
  }
  if (std::getenv("KILN_LOOPS_VERBOSE")) std::printf("smaller %d proofs %d\n", simplified_smaller, proofs);
  // The test must exercise the rules, not only pass through.
  EXPECT_GT(simplified_smaller, kExprs / 10);
  EXPECT_GT(proofs, kExprs / 10);
}

// Division identities stated directly over a grid, with negative values included.
TEST(IndexProperty, DivisionRulesOnNegativeValues) {
  Expr x = Expr::var("x", 13), y = Expr::var("y", 5);
  for (int k = 1; k <= 5; ++k)
    for (int n = 1; n <= 6; ++n) {
      std::vector<Expr> cases = {floordiv((x - 6) * k + y, n), mod((x - 6) * k + y, n),
                                 floordiv(floordiv(x - 6, k), n), mod(mod(x - 6, k * n), n),
                                 floordiv(x - 6, n) * n + mod(x - 6, n)};
      for (const Expr& e : cases) {
        Expr s = simplify(e);
        for (int64_t vx = 0; vx < 13; ++vx)
          for (int64_t vy = 0; vy < 5; ++vy) {
            int64_t a = (vx - 6) * k + vy;
            std::unordered_map<std::string, int64_t> env = {{"x", vx}, {"y", vy}};
            int64_t v = evaluate(s, env);
            ASSERT_EQ(v, evaluate(e, env)) << to_string(e) << " -> " << to_string(s);
            if (&e == &cases[0]) {
              ASSERT_EQ(v, py_floordiv(a, n));
            } else if (&e == &cases[1]) {
              ASSERT_EQ(v, a - py_floordiv(a, n) * n);
            }
          }
      }
      EXPECT_EQ(simplify(cases[4]), x - 6);
    }
}

}  // namespace
}  // namespace kiln::loops
