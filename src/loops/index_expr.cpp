// Expression nodes, identity (hash, equality, order) and the canonicalising constructors.
#include "loops/index_expr.h"

#include <algorithm>

#include "kiln/graph.h"
#include "loops/index_poly.h"
#include "support/error.h"

namespace kiln::loops {

using detail::Monomial;
using detail::Poly;

std::string_view kind_name(ExprKind k) {
  switch (k) {
    case ExprKind::Const: return "Const";
    case ExprKind::Var: return "Var";
    case ExprKind::Sym: return "Sym";
    case ExprKind::Add: return "Add";
    case ExprKind::Mul: return "Mul";
    case ExprKind::FloorDiv: return "FloorDiv";
    case ExprKind::Mod: return "Mod";
    case ExprKind::Min: return "Min";
    case ExprKind::Max: return "Max";
  }
  return "?";
}

namespace {

// Deterministic across runs and platforms (no pointer or std::hash values).
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Sort rank: variables first, then symbols, then the other atoms; products and sums last.
int rank(ExprKind k) {
  switch (k) {
    case ExprKind::Var: return 0;
    case ExprKind::Sym: return 1;
    case ExprKind::FloorDiv: return 2;
    case ExprKind::Mod: return 3;
    case ExprKind::Min: return 4;
    case ExprKind::Max: return 5;
    case ExprKind::Mul: return 6;
    case ExprKind::Add: return 7;
    case ExprKind::Const: return 8;
  }
  return 9;
}

// Natural order, so that x2 sorts before x10.
int natural_compare(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;
      while (j0 < b.size() && b[j0] == '0') ++j0;
      size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && digit(a[i1])) ++i1;
      while (j1 < b.size() && digit(b[j1])) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0 ? -1 : 1;
      if (int c = a.substr(i0, i1 - i0).compare(b.substr(j0, j1 - j0)); c != 0) return c < 0 ? -1 : 1;
      i = i1;
      j = j1;
    } else {
      if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (i != a.size() || j != b.size()) return i == a.size() ? -1 : 1;
  int c = a.compare(b);  // "x01" vs "x1"
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

const Expr& zero() {
  static const Expr z = Expr::constant(0);  // a constant, not a registration
  return z;
}

}  // namespace

Expr make_node(ExprNode n) {
  uint64_t h = mix(0x51ed270b27d5a2c1ULL, static_cast<uint64_t>(n.kind));
  switch (n.kind) {
    case ExprKind::Const: h = mix(h, static_cast<uint64_t>(n.value)); break;
    case ExprKind::Sym:  // the hint is not part of the identity
      h = mix(mix(h, hash_string(n.name)), static_cast<uint64_t>(n.value));
      break;
    case ExprKind::Var: h = mix(h, hash_string(n.name)); break;
    default: break;
  }
  for (const Expr& o : n.ops) h = mix(h, o.hash());
  n.hash = static_cast<size_t>(h);
  return Expr(std::make_shared<const ExprNode>(std::move(n)));
}

Expr::Expr() : Expr(zero()) {}

Expr Expr::constant(int64_t value) {
  ExprNode n;
  n.kind = ExprKind::Const;
  n.value = value;
  return make_node(std::move(n));
}

Expr Expr::var(std::string name, Expr extent) {
  KILN_INTERNAL_CHECK(!name.empty(), "loop variable without a name");
  ExprNode n;
  n.kind = ExprKind::Var;
  n.name = std::move(name);
  n.ops = {std::move(extent)};
  return make_node(std::move(n));
}

Expr Expr::sym(std::string name, int64_t hint, int64_t min_value) {
  KILN_INTERNAL_CHECK(!name.empty(), "size symbol without a name");
  KILN_INTERNAL_CHECK(min_value >= 0, "size symbol '{}' with negative minimum {}", name, min_value);
  ExprNode n;
  n.kind = ExprKind::Sym;
  n.name = std::move(name);
  n.value = min_value;
  n.hint = hint;
  return make_node(std::move(n));
}

ExprKind Expr::kind() const { return node_->kind; }

int64_t Expr::value() const {
  KILN_INTERNAL_CHECK(is_const(), "value() of a {} expression", kind_name(kind()));
  return node_->value;
}
const std::string& Expr::name() const {
  KILN_INTERNAL_CHECK(is_var() || is_sym(), "name() of a {} expression", kind_name(kind()));
  return node_->name;
}
const Expr& Expr::extent() const {
  KILN_INTERNAL_CHECK(is_var(), "extent() of a {} expression", kind_name(kind()));
  return node_->ops[0];
}
int64_t Expr::hint() const {
  KILN_INTERNAL_CHECK(is_sym(), "hint() of a {} expression", kind_name(kind()));
  return node_->hint;
}
int64_t Expr::min_value() const {
  KILN_INTERNAL_CHECK(is_sym(), "min_value() of a {} expression", kind_name(kind()));
  return node_->value;
}
const std::vector<Expr>& Expr::operands() const { return node_->ops; }
size_t Expr::hash() const { return node_->hash; }

bool Expr::operator==(const Expr& o) const {
  if (node_ == o.node_) return true;
  if (node_->hash != o.node_->hash) return false;
  return compare(*this, o) == 0;
}

int compare(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return 0;
  const ExprNode& x = *a.node_;
  const ExprNode& y = *b.node_;
  if (x.kind != y.kind) return rank(x.kind) < rank(y.kind) ? -1 : 1;
  if (x.kind == ExprKind::Var || x.kind == ExprKind::Sym) {
    if (int c = natural_compare(x.name, y.name); c != 0) return c;
  }
  if (x.kind == ExprKind::Const || x.kind == ExprKind::Sym) {
    if (x.value != y.value) return x.value < y.value ? -1 : 1;
  }
  size_t n = std::min(x.ops.size(), y.ops.size());
  for (size_t i = 0; i < n; ++i)
    if (int c = compare(x.ops[i], y.ops[i]); c != 0) return c;
  if (x.ops.size() != y.ops.size()) return x.ops.size() < y.ops.size() ? -1 : 1;
  return 0;
}

// --- Canonical constructors -------------------------------------------------------------------

Expr add(const std::vector<Expr>& terms) {
  Poly p;
  for (const Expr& t : terms) detail::poly_add_into(p, detail::to_poly(t));
  return detail::from_poly(p);
}

Expr mul(const std::vector<Expr>& factors) {
  Poly p = detail::to_poly(Expr(1));
  for (const Expr& f : factors) {
    if (f.is_const(0)) return Expr(0);
    p = detail::poly_mul(p, detail::to_poly(f));
  }
  return detail::from_poly(p);
}

Expr operator+(const Expr& a, const Expr& b) { return add({a, b}); }
Expr operator-(const Expr& a, const Expr& b) { return add({a, mul({b, Expr(-1)})}); }
Expr operator-(const Expr& a) { return mul({a, Expr(-1)}); }
Expr operator*(const Expr& a, const Expr& b) { return mul({a, b}); }

namespace {

int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t mod_int(int64_t a, int64_t b) { return a - floordiv_int(a, b) * b; }

void check_divisor(const Expr& b, std::string_view op) {
  if (b.is_const()) {
    KILN_INTERNAL_CHECK(b.value() > 0, "{} by the non-positive constant {}", op, b.value());
  } else {
    KILN_INTERNAL_CHECK(bounds(b).hi > 0, "{} by {}, which is never positive", op, to_string(b));
  }
}

ExprNode binary(ExprKind k, Expr a, Expr b) {
  ExprNode n;
  n.kind = k;
  n.ops = {std::move(a), std::move(b)};
  return n;
}

Poly divide_poly(const Poly& p, const Monomial& g) {
  Poly r;
  for (const auto& [atoms, c] : p) {
    auto q = detail::divide(Monomial{c, atoms}, g);
    KILN_INTERNAL_CHECK(q.has_value(), "common factor does not divide");
    detail::poly_add_into(r, detail::to_poly(detail::from_monomial(*q)));
  }
  return r;
}

bool is_trivial(const Monomial& g) { return g.coeff == 1 && g.atoms.empty(); }

}  // namespace

// Identities used here hold for every integer numerator and positive divisor:
//   (q*b + r) // b = q + r // b,   (g*a) // (g*b) = a // b,   (a // b) // c = a // (b*c).
Expr floordiv(const Expr& a, const Expr& b) {
  check_divisor(b, "floor division");
  if (a.is_const() && b.is_const()) return Expr(floordiv_int(a.value(), b.value()));
  if (b.is_const(1)) return a;
  if (a.is_const(0)) return Expr(0);
  if (a == b) return Expr(1);
  if (a.kind() == ExprKind::FloorDiv) return floordiv(a.lhs(), mul({a.rhs(), b}));
  if (auto divisor = detail::as_monomial(b)) {
    Poly pa = detail::to_poly(a);
    Poly quotient, rest;
    for (const auto& [atoms, c] : pa) {
      if (auto q = detail::divide(Monomial{c, atoms}, *divisor))
        detail::poly_add_into(quotient, detail::to_poly(detail::from_monomial(*q)));
      else
        rest.emplace(atoms, c);
    }
    if (!quotient.empty()) return detail::from_poly(quotient) + floordiv(detail::from_poly(rest), b);
    Monomial g = detail::common_factor(pa, *divisor);
    if (!is_trivial(g)) {
      return floordiv(detail::from_poly(divide_poly(pa, g)),
                      detail::from_monomial(*detail::divide(*divisor, g)));
    }
  }
  return make_node(binary(ExprKind::FloorDiv, a, b));
}

//   (q*b + r) % b = r % b,   (g*a) % (g*b) = g * (a % b),   (a % (k*b)) % b = a % b.
Expr mod(const Expr& a, const Expr& b) {
  check_divisor(b, "modulo");
  if (a.is_const() && b.is_const()) return Expr(mod_int(a.value(), b.value()));
  if (b.is_const(1) || a.is_const(0) || a == b) return Expr(0);
  auto divisor = detail::as_monomial(b);
  if (a.kind() == ExprKind::Mod && divisor) {
    auto inner = detail::as_monomial(a.rhs());
    if (inner && detail::divide(*inner, *divisor)) return mod(a.lhs(), b);
  }
  if (divisor) {
    Poly pa = detail::to_poly(a);
    Poly rest;
    for (const auto& [atoms, c] : pa)
      if (!detail::divide(Monomial{c, atoms}, *divisor)) rest.emplace(atoms, c);
    if (rest.size() != pa.size()) return mod(detail::from_poly(rest), b);
    Monomial g = detail::common_factor(pa, *divisor);
    if (!is_trivial(g)) {
      return detail::from_monomial(g) * mod(detail::from_poly(divide_poly(pa, g)),
                                            detail::from_monomial(*detail::divide(*divisor, g)));
    }
  }
  return make_node(binary(ExprKind::Mod, a, b));
}

Expr ceildiv(const Expr& a, const Expr& b) { return floordiv(a + b - Expr(1), b); }

Expr minimum(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::min(a.value(), b.value()));
  if (a == b) return a;
  return compare(a, b) < 0 ? make_node(binary(ExprKind::Min, a, b)) : make_node(binary(ExprKind::Min, b, a));
}

Expr maximum(const Expr& a, const Expr& b) {
  if (a.is_const() && b.is_const()) return Expr(std::max(a.value(), b.value()));
  if (a == b) return a;
  return compare(a, b) < 0 ? make_node(binary(ExprKind::Max, a, b)) : make_node(binary(ExprKind::Max, b, a));
}

Expr from_dim(const Dim& d, int64_t sym_min_value) {
  if (d.is_static()) return Expr(d.value);
  return Expr::sym(d.symbol, d.hint, sym_min_value);
}

}  // namespace kiln::loops
