// Internal to src/loops: the polynomial view behind Add and Mul. A polynomial maps a monomial (a
// sorted list of atoms: variables, symbols, divisions, min/max; empty for the constant term) to a
// non-zero integer coefficient.
#pragma once
#include <map>
#include <optional>
#include <vector>

#include "loops/index_expr.h"

namespace kiln::loops {
// Wraps a node whose fields are already canonical; computes its hash.
Expr make_node(ExprNode n);
}  // namespace kiln::loops

namespace kiln::loops::detail {

using Atoms = std::vector<Expr>;
struct AtomsLess {
  bool operator()(const Atoms& a, const Atoms& b) const;
};
using Poly = std::map<Atoms, int64_t, AtomsLess>;

struct Monomial {
  int64_t coeff = 1;
  Atoms atoms;
};

bool is_atom(const Expr& e);  // not Const, Add or Mul
Poly to_poly(const Expr& e);
Expr from_poly(const Poly& p);
Expr from_monomial(const Monomial& m);
// a + scale * b.
void poly_add_into(Poly& a, const Poly& b, int64_t scale = 1);
Poly poly_mul(const Poly& a, const Poly& b);
// e as a single monomial (a constant, an atom or a product), if it is one.
std::optional<Monomial> as_monomial(const Expr& e);
// m / d when the coefficient and the atoms (as a multiset) divide exactly.
std::optional<Monomial> divide(const Monomial& m, const Monomial& d);
// Greatest common monomial of every term of p and of d: positive gcd of the coefficients times
// the variables and symbols (never other atoms, which may be negative) that all of them share.
Monomial common_factor(const Poly& p, const Monomial& d);

int64_t mul_or_fail(int64_t a, int64_t b);
int64_t add_or_fail(int64_t a, int64_t b);

}  // namespace kiln::loops::detail
