// Range-based simplification. Every rule either is an identity for all integers or is guarded by a
// proof from bounds()/prove_nonneg(), which know only declared ranges; in particular a term
// disappears only when its value is proven to be a single point (zero), never because a symbol's
// hint suggests a size of 1.
#include <algorithm>

#include "loops/index_expr.h"
#include "loops/index_poly.h"
#include "support/error.h"

namespace kiln::loops {

using detail::Monomial;
using detail::Poly;

namespace {

// Divisors k of n (positive: a coefficient gcd times variables and symbols of n) that a term of
// the numerator shares with n, for the split (q*k + r) with 0 <= r < k.
std::vector<Monomial> shared_divisors(const Poly& numerator, const Monomial& n) {
  std::vector<Monomial> out;
  for (const auto& [atoms, c] : numerator) {
    if (atoms.empty()) continue;
    Poly single;
    single.emplace(atoms, c);
    Monomial k = detail::common_factor(single, n);
    if (k.coeff == 1 && k.atoms.empty()) continue;
    bool seen = std::any_of(out.begin(), out.end(),
                            [&](const Monomial& m) { return m.coeff == k.coeff && m.atoms == k.atoms; });
    if (!seen) out.push_back(std::move(k));
  }
  return out;
}

struct Split {
  Expr quotient;   // q, the divisible part divided by k
  Expr rest;       // r
  Expr k, n_by_k;  // k and n / k
};

// Finds a = q*k + r with k | n and 0 <= r < k proven.
std::optional<Split> split_numerator(const Expr& a, const Expr& n) {
  auto nm = detail::as_monomial(n);
  if (!nm) return std::nullopt;
  Poly pa = detail::to_poly(a);
  for (const Monomial& k : shared_divisors(pa, *nm)) {
    Poly q, r;
    for (const auto& [atoms, c] : pa) {
      if (auto d = detail::divide(Monomial{c, atoms}, k))
        detail::poly_add_into(q, detail::to_poly(detail::from_monomial(*d)));
      else
        r.emplace(atoms, c);
    }
    Expr rest = detail::from_poly(r);
    Expr ke = detail::from_monomial(k);
    if (q.empty() || !prove_nonneg(rest) || !prove_lt(rest, ke)) continue;
    return Split{detail::from_poly(q), rest, ke, detail::from_monomial(*detail::divide(*nm, k))};
  }
  return std::nullopt;
}

// c*R*(x % n) + c*R*n*(x // n) = c*R*x when the sum holds both terms: recombines (x // n) * n + x % n
// into x (the inverse of delinearising a flat index).
std::optional<Expr> recombine_mod(const Expr& sum) {
  Poly p = detail::to_poly(sum);
  for (const auto& [atoms, c] : p) {
    for (size_t i = 0; i < atoms.size(); ++i) {
      const Expr& t = atoms[i];
      if (t.kind() != ExprKind::Mod) continue;
      std::vector<Expr> rest(atoms.begin(), atoms.begin() + static_cast<std::ptrdiff_t>(i));
      rest.insert(rest.end(), atoms.begin() + static_cast<std::ptrdiff_t>(i) + 1, atoms.end());
      rest.push_back(Expr(c));
      Expr coeff = mul(rest);
      Poly partner = detail::to_poly(coeff * t.rhs() * floordiv(t.lhs(), t.rhs()));
      bool present = std::all_of(partner.begin(), partner.end(), [&](const auto& term) {
        auto it = p.find(term.first);
        return it != p.end() && it->second == term.second;
      });
      if (!present) continue;
      Poly next = p;
      next.erase(atoms);
      detail::poly_add_into(next, partner, -1);
      detail::poly_add_into(next, detail::to_poly(coeff * t.lhs()));
      return detail::from_poly(next);
    }
  }
  return std::nullopt;
}

// One rule application at a node whose operands are already simplified.
Expr simplify_node(const Expr& e) {
  if (e.is_const() || e.is_var() || e.is_sym()) {
    Bounds b = bounds(e);
    return b.is_point() ? Expr(b.lo) : e;  // a variable of extent 1 is 0
  }
  Bounds b = bounds(e);
  if (b.is_point()) return Expr(b.lo);
  switch (e.kind()) {
    case ExprKind::FloorDiv: {
      const Expr& a = e.lhs();
      const Expr& n = e.rhs();
      if (prove_nonneg(a) && prove_lt(a, n)) return Expr(0);
      if (auto s = split_numerator(a, n)) return floordiv(s->quotient, s->n_by_k);
      break;
    }
    case ExprKind::Mod: {
      const Expr& a = e.lhs();
      const Expr& n = e.rhs();
      if (prove_nonneg(a) && prove_lt(a, n)) return a;
      // Within one period [q*n, (q+1)*n): a - q*n.
      if (Expr q = simplify_node(floordiv(a, n)); q.is_const()) return a - q * n;
      if (auto s = split_numerator(a, n)) return s->k * mod(s->quotient, s->n_by_k) + s->rest;
      break;
    }
    case ExprKind::Min:
      if (prove_le(e.lhs(), e.rhs())) return e.lhs();
      if (prove_le(e.rhs(), e.lhs())) return e.rhs();
      break;
    case ExprKind::Max:
      if (prove_le(e.lhs(), e.rhs())) return e.rhs();
      if (prove_le(e.rhs(), e.lhs())) return e.lhs();
      break;
    case ExprKind::Add:
      if (auto r = recombine_mod(e)) return *r;
      break;
    default: break;
  }
  return e;
}

class Simplifier {
 public:
  Expr run(const Expr& e) {
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
    Expr rebuilt = e;
    const auto& ops = e.operands();
    switch (e.kind()) {
      case ExprKind::Add: rebuilt = add(each(ops)); break;
      case ExprKind::Mul: rebuilt = mul(each(ops)); break;
      case ExprKind::FloorDiv: rebuilt = floordiv(run(ops[0]), run(ops[1])); break;
      case ExprKind::Mod: rebuilt = mod(run(ops[0]), run(ops[1])); break;
      case ExprKind::Min: rebuilt = minimum(run(ops[0]), run(ops[1])); break;
      case ExprKind::Max: rebuilt = maximum(run(ops[0]), run(ops[1])); break;
      default: break;  // leaves; a variable's extent is part of its identity and stays as given
    }
    Expr out = simplify_node(rebuilt);
    memo_.emplace(e, out);
    return out;
  }

 private:
  std::vector<Expr> each(const std::vector<Expr>& ops) {
    std::vector<Expr> out;
    out.reserve(ops.size());
    for (const Expr& o : ops) out.push_back(run(o));
    return out;
  }
  ExprMap<Expr> memo_;
};

}  // namespace

Expr simplify(const Expr& e) {
  // A rule may expose new opportunities above or below it; iterate to a fixed point.
  Expr cur = e;
  for (int round = 0; round < 16; ++round) {
    Expr next = Simplifier().run(cur);
    if (next == cur) return next;
    cur = next;
  }
  return cur;
}

}  // namespace kiln::loops
