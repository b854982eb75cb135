#include "loops/index_poly.h"

#include <algorithm>
#include <numeric>

#include "support/checked_math.h"

namespace kiln::loops::detail {

int64_t mul_or_fail(int64_t a, int64_t b) { return checked_mul(a, b, "index expression"); }
int64_t add_or_fail(int64_t a, int64_t b) { return checked_add(a, b, "index expression"); }

bool AtomsLess::operator()(const Atoms& a, const Atoms& b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
}

bool is_atom(const Expr& e) {
  auto k = e.kind();
  return k != ExprKind::Const && k != ExprKind::Add && k != ExprKind::Mul;
}

std::optional<Monomial> as_monomial(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const: return Monomial{e.value(), {}};
    case ExprKind::Add: return std::nullopt;
    case ExprKind::Mul: {
      Monomial m;
      for (const Expr& f : e.operands()) {
        if (f.is_const()) m.coeff = f.value();
        else m.atoms.push_back(f);
      }
      return m;
    }
    default: return Monomial{1, {e}};
  }
}

Poly to_poly(const Expr& e) {
  Poly p;
  if (e.kind() == ExprKind::Add) {
    for (const Expr& t : e.operands()) {
      Monomial m = *as_monomial(t);
      p[std::move(m.atoms)] = m.coeff;  // canonical sums hold distinct monomials
    }
    return p;
  }
  Monomial m = *as_monomial(e);
  if (m.coeff != 0) p[std::move(m.atoms)] = m.coeff;
  return p;
}

Expr from_monomial(const Monomial& m) {
  if (m.coeff == 0) return Expr(0);
  if (m.atoms.empty()) return Expr(m.coeff);
  if (m.atoms.size() == 1 && m.coeff == 1) return m.atoms[0];
  ExprNode n;
  n.kind = ExprKind::Mul;
  n.ops = m.atoms;
  if (m.coeff != 1) n.ops.push_back(Expr(m.coeff));
  return make_node(std::move(n));
}

Expr from_poly(const Poly& p) {
  std::vector<Expr> terms;
  std::optional<int64_t> constant;
  for (const auto& [atoms, c] : p) {
    if (c == 0) continue;
    if (atoms.empty()) constant = c;
    else terms.push_back(from_monomial({c, atoms}));
  }
  if (constant) terms.push_back(Expr(*constant));  // constants print last: (x0 * 768 + x1 + 5)
  if (terms.empty()) return Expr(0);
  if (terms.size() == 1) return terms[0];
  ExprNode n;
  n.kind = ExprKind::Add;
  n.ops = std::move(terms);
  return make_node(std::move(n));
}

void poly_add_into(Poly& a, const Poly& b, int64_t scale) {
  for (const auto& [atoms, c] : b) {
    auto [it, inserted] = a.try_emplace(atoms, 0);
    it->second = add_or_fail(it->second, mul_or_fail(c, scale));
    if (it->second == 0) a.erase(it);
  }
}

Poly poly_mul(const Poly& a, const Poly& b) {
  Poly r;
  for (const auto& [aa, ca] : a) {
    for (const auto& [ba, cb] : b) {
      Atoms merged;
      merged.reserve(aa.size() + ba.size());
      std::merge(aa.begin(), aa.end(), ba.begin(), ba.end(), std::back_inserter(merged),
                 [](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
      auto [it, inserted] = r.try_emplace(std::move(merged), 0);
      it->second = add_or_fail(it->second, mul_or_fail(ca, cb));
      if (it->second == 0) r.erase(it);
    }
  }
  return r;
}

std::optional<Monomial> divide(const Monomial& m, const Monomial& d) {
  if (d.coeff == 0 || m.coeff % d.coeff != 0) return std::nullopt;
  Monomial q{m.coeff / d.coeff, {}};
  // Multiset difference of two sorted lists.
  size_t j = 0;
  for (const Expr& a : m.atoms) {
    if (j < d.atoms.size() && a == d.atoms[j]) {
      ++j;
      continue;
    }
    q.atoms.push_back(a);
  }
  if (j != d.atoms.size()) return std::nullopt;
  return q;
}

Monomial common_factor(const Poly& p, const Monomial& d) {
  Monomial g{d.coeff < 0 ? -d.coeff : d.coeff, {}};
  for (const Expr& a : d.atoms)
    if (a.is_var() || a.is_sym()) g.atoms.push_back(a);
  for (const auto& [atoms, c] : p) {
    g.coeff = std::gcd(g.coeff, c);
    Atoms shared;
    std::set_intersection(g.atoms.begin(), g.atoms.end(), atoms.begin(), atoms.end(),
                          std::back_inserter(shared),
                          [](const Expr& x, const Expr& y) { return compare(x, y) < 0; });
    g.atoms = std::move(shared);
  }
  return g;
}

}  // namespace kiln::loops::detail
