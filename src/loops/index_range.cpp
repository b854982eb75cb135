// Range analysis and non-negativity proofs. Only declared facts are used: a variable is in
// [0, extent), a symbol is >= its declared minimum, a divisor is positive. Hints are never read.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "loops/index_expr.h"
#include "loops/index_poly.h"

namespace kiln::loops {

using detail::Poly;

namespace {

bool is_inf(int64_t v) { return v == kNegInf || v == kPosInf; }

// Saturating arithmetic on bounds; an overflow widens towards the unbounded side.
int64_t add_lo(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kNegInf : r;
}
int64_t add_hi(int64_t a, int64_t b) {
  if (a == kPosInf || b == kPosInf) return kPosInf;
  if (a == kNegInf || b == kNegInf) return kNegInf;
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kPosInf : r;
}
// Product of two endpoints; infinities stand for unbounded finite values, so inf * 0 = 0.
int64_t mul_end(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  int64_t r;
  if (is_inf(a) || is_inf(b) || __builtin_mul_overflow(a, b, &r)) return negative ? kNegInf : kPosInf;
  return r;
}
// floor(a / b) for b >= 1 (b may be +inf, the limit of huge divisors).
int64_t div_end(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (b == kPosInf) return a >= 0 ? 0 : -1;
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

Bounds add_bounds(Bounds a, Bounds b) { return {add_lo(a.lo, b.lo), add_hi(a.hi, b.hi)}; }

Bounds mul_bounds(Bounds a, Bounds b) {
  int64_t c[4] = {mul_end(a.lo, b.lo), mul_end(a.lo, b.hi), mul_end(a.hi, b.lo), mul_end(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Bounds positive(Bounds b) { return {std::max<int64_t>(b.lo, 1), std::max<int64_t>(b.hi, 1)}; }

Bounds floordiv_bounds(Bounds a, Bounds b) {
  b = positive(b);
  return {std::min(div_end(a.lo, b.lo), div_end(a.lo, b.hi)), std::max(div_end(a.hi, b.lo), div_end(a.hi, b.hi))};
}

Bounds mod_bounds(Bounds a, Bounds b) {
  b = positive(b);
  if (a.lo >= 0 && a.hi < b.lo) return a;
  if (b.lo == b.hi && !is_inf(a.lo) && !is_inf(a.hi) && div_end(a.lo, b.lo) == div_end(a.hi, b.lo)) {
    int64_t shift = div_end(a.lo, b.lo) * b.lo;  // a within one period
    return {a.lo - shift, a.hi - shift};
  }
  Bounds r{0, b.hi == kPosInf ? kPosInf : b.hi - 1};
  if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
  return r;
}

}  // namespace

Bounds bounds(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const: return {e.value(), e.value()};
    case ExprKind::Var: {
      int64_t ext_hi = bounds(e.extent()).hi;
      return {0, ext_hi == kPosInf ? kPosInf : std::max<int64_t>(0, ext_hi - 1)};
    }
    case ExprKind::Sym: return {e.min_value(), kPosInf};
    case ExprKind::Add: {
      Bounds r{0, 0};
      for (const Expr& t : e.operands()) r = add_bounds(r, bounds(t));
      return r;
    }
    case ExprKind::Mul: {
      Bounds r{1, 1};
      for (const Expr& f : e.operands()) r = mul_bounds(r, bounds(f));
      return r;
    }
    case ExprKind::FloorDiv: return floordiv_bounds(bounds(e.lhs()), bounds(e.rhs()));
    case ExprKind::Mod: return mod_bounds(bounds(e.lhs()), bounds(e.rhs()));
    case ExprKind::Min: {
      Bounds a = bounds(e.lhs()), b = bounds(e.rhs());
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case ExprKind::Max: {
      Bounds a = bounds(e.lhs()), b = bounds(e.rhs());
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
  }
  return {};
}

namespace {

// evaluate() without exceptions: nullopt for a missing name, a non-positive divisor or overflow.
std::optional<int64_t> try_evaluate(const Expr& e, const std::unordered_map<std::string, int64_t>& env) {
  switch (e.kind()) {
    case ExprKind::Const: return e.value();
    case ExprKind::Var:
    case ExprKind::Sym: {
      auto it = env.find(e.name());
      if (it == env.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::Add:
    case ExprKind::Mul: {
      bool is_add = e.kind() == ExprKind::Add;
      int64_t r = is_add ? 0 : 1;
      for (const Expr& o : e.operands()) {
        auto v = try_evaluate(o, env);
        if (!v || (is_add ? __builtin_add_overflow(r, *v, &r) : __builtin_mul_overflow(r, *v, &r)))
          return std::nullopt;
      }
      return r;
    }
    default: {
      auto a = try_evaluate(e.lhs(), env), b = try_evaluate(e.rhs(), env);
      if (!a || !b) return std::nullopt;
      if (e.kind() == ExprKind::Min) return std::min(*a, *b);
      if (e.kind() == ExprKind::Max) return std::max(*a, *b);
      if (*b <= 0) return std::nullopt;
      int64_t q = div_end(*a, *b);
      return e.kind() == ExprKind::FloorDiv ? q : *a - q * *b;
    }
  }
}

// A cheap disproof: d < 0 at a valid point (symbols at small values, variables at the ends of their
// ranges) means that d >= 0 cannot be proven, so the search can stop. Only ever answers "not
// proven", so it cannot make a proof unsound.
bool refuted(const Expr& d) {
  std::vector<Expr> vars = free_vars(d), syms = free_syms(d);
  if (vars.size() > 6) return false;
  for (int64_t offset : {0, 1, 5}) {
    std::unordered_map<std::string, int64_t> env;
    for (const Expr& s : syms) env[s.name()] = s.min_value() + offset;
    std::vector<int64_t> last;
    for (const Expr& v : vars) {
      auto extent = try_evaluate(v.extent(), env);
      if (!extent || *extent < 1) break;
      last.push_back(*extent - 1);
    }
    if (last.size() != vars.size()) continue;
    // All low, all high, and each variable flipped against the others.
    int n = static_cast<int>(vars.size());
    for (int pattern = -2; pattern < 2 * n; ++pattern) {
      for (int i = 0; i < n; ++i) {
        bool high = pattern == -1 || (pattern >= 0 && ((pattern % n == i) != (pattern >= n)));
        env[vars[static_cast<size_t>(i)].name()] = high ? last[static_cast<size_t>(i)] : 0;
      }
      auto v = try_evaluate(d, env);
      if (v && *v < 0) return true;
    }
  }
  return false;
}

// Proves d >= 0 by eliminating one atom t at a time: write d = t*A + B; if A >= 0 (proven), then
// d >= L*A + B for any proven lower bound L of t, and if A <= 0, d >= U*A + B for an upper bound U.
// These bounds hold pointwise, so each step is sound even when A or B still mention t. A floor
// division t = x // n is eliminated through n*t, which lies in [x - n + 1, x]: since n*d is a
// multiple of n, n*d >= 0 follows from n*d + n - 1 >= 0. Intervals close each branch.
class Prover {
 public:
  bool nonneg(const Expr& d, int depth) {
    if (auto it = memo_.find(d); it != memo_.end()) return it->second;
    bool r = search(d, depth);
    memo_.emplace(d, r);
    return r;
  }

 private:
  static constexpr int kMaxDepth = 12;
  int budget_ = 400;
  ExprMap<bool> memo_;

  bool search(const Expr& d, int depth) {
    if (--budget_ < 0) return false;
    Bounds b = bounds(d);
    if (b.lo >= 0) return true;
    if (b.hi < 0 || depth >= kMaxDepth || refuted(d)) return false;
    Poly p = detail::to_poly(d);
    for (const Expr& t : candidates(p)) {
      Poly a_poly, b_poly;
      for (const auto& [atoms, c] : p) {
        auto it = std::find(atoms.begin(), atoms.end(), t);
        if (it == atoms.end()) {
          b_poly.emplace(atoms, c);
        } else {
          detail::Atoms rest(atoms.begin(), it);
          rest.insert(rest.end(), it + 1, atoms.end());
          a_poly.emplace(std::move(rest), c);
        }
      }
      Expr A = detail::from_poly(a_poly), B = detail::from_poly(b_poly);
      bool a_nonneg = nonneg(A, depth + 1);
      if (!a_nonneg && !nonneg(-A, depth + 1)) continue;
      for (const Expr& next : eliminations(t, A, B, a_nonneg, depth))
        if (nonneg(next, depth + 1)) return true;
      if (budget_ < 0) return false;
    }
    return false;
  }

  // Opaque atoms first (their bounds mention the variables inside), then variables, then symbols.
  static std::vector<Expr> candidates(const Poly& p) {
    std::vector<Expr> atoms;
    for (const auto& [m, c] : p)
      for (const Expr& a : m)
        if (std::find(atoms.begin(), atoms.end(), a) == atoms.end()) atoms.push_back(a);
    auto group = [](const Expr& a) { return a.is_var() ? 1 : (a.is_sym() ? 2 : 0); };
    std::stable_sort(atoms.begin(), atoms.end(),
                     [&](const Expr& x, const Expr& y) { return group(x) < group(y); });
    return atoms;
  }

  // Expressions whose non-negativity implies that of t*A + B.
  std::vector<Expr> eliminations(const Expr& t, const Expr& A, const Expr& B, bool a_nonneg, int depth) {
    std::vector<Expr> lower, upper;
    Bounds tb = bounds(t);
    if (tb.lo != kNegInf) lower.push_back(Expr(tb.lo));
    if (tb.hi != kPosInf) upper.push_back(Expr(tb.hi));
    switch (t.kind()) {
      case ExprKind::Var: upper.insert(upper.begin(), t.extent() - Expr(1)); break;
      case ExprKind::Mod:
        upper.insert(upper.begin(), t.rhs() - Expr(1));
        if (nonneg(t.lhs(), depth + 1)) upper.push_back(t.lhs());  // a % n <= a when a >= 0
        break;
      case ExprKind::Min:
        upper.push_back(t.lhs());
        upper.push_back(t.rhs());
        break;
      case ExprKind::Max:
        lower.push_back(t.lhs());
        lower.push_back(t.rhs());
        break;
      case ExprKind::FloorDiv: {
        const Expr& x = t.lhs();
        const Expr& n = t.rhs();
        Expr scaled = a_nonneg ? A * (x - n + Expr(1)) : A * x;
        return {scaled + n * B + n - Expr(1)};
      }
      default: break;
    }
    std::vector<Expr> out;
    for (const Expr& bound : a_nonneg ? lower : upper) {
      Expr next = A * bound + B;
      if (std::find(out.begin(), out.end(), next) == out.end()) out.push_back(std::move(next));
    }
    return out;
  }
};

}  // namespace

bool prove_nonneg(const Expr& e) { return Prover().nonneg(e, 0); }
bool prove_le(const Expr& a, const Expr& b) { return prove_nonneg(b - a); }
bool prove_lt(const Expr& a, const Expr& b) { return prove_nonneg(b - a - Expr(1)); }

}  // namespace kiln::loops
