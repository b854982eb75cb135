// Substitution, evaluation and free-variable queries.
#include <algorithm>
#include <set>

#include "loops/index_expr.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::loops {

namespace {

Expr substitute_memo(const Expr& e, const ExprMap<Expr>& repl, ExprMap<Expr>& memo) {
  if (auto it = repl.find(e); it != repl.end()) return it->second;
  if (e.is_const() || e.is_sym()) return e;
  if (auto it = memo.find(e); it != memo.end()) return it->second;
  auto sub = [&](const Expr& x) { return substitute_memo(x, repl, memo); };
  std::vector<Expr> ops;
  for (const Expr& o : e.operands()) ops.push_back(sub(o));
  Expr out;
  switch (e.kind()) {
    case ExprKind::Var: out = ops[0] == e.extent() ? e : Expr::var(e.name(), ops[0]); break;
    case ExprKind::Add: out = add(ops); break;
    case ExprKind::Mul: out = mul(ops); break;
    case ExprKind::FloorDiv: out = floordiv(ops[0], ops[1]); break;
    case ExprKind::Mod: out = mod(ops[0], ops[1]); break;
    case ExprKind::Min: out = minimum(ops[0], ops[1]); break;
    case ExprKind::Max: out = maximum(ops[0], ops[1]); break;
    default: out = e; break;
  }
  memo.emplace(e, out);
  return out;
}

int64_t floordiv_checked(int64_t a, int64_t b) {
  KILN_INTERNAL_CHECK(b > 0, "index expression divides by {}, which is not positive", b);
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

struct Collector {
  bool want_vars;
  std::set<Expr> found;
  void visit(const Expr& e) {
    if (e.is_var() && want_vars) {
      found.insert(e);
      return;  // the extent holds symbols, not variables of this expression
    }
    if (e.is_sym() && !want_vars) found.insert(e);
    for (const Expr& o : e.operands()) visit(o);
  }
};

std::vector<Expr> collect(const Expr& e, bool want_vars) {
  Collector c{want_vars, {}};
  c.visit(e);
  return {c.found.begin(), c.found.end()};
}

}  // namespace

Expr substitute(const Expr& e, const ExprMap<Expr>& replacements) {
  ExprMap<Expr> memo;
  return substitute_memo(e, replacements, memo);
}

int64_t evaluate(const Expr& e, const std::unordered_map<std::string, int64_t>& values) {
  constexpr std::string_view what = "index expression";
  switch (e.kind()) {
    case ExprKind::Const: return e.value();
    case ExprKind::Var:
    case ExprKind::Sym: {
      auto it = values.find(e.name());
      KILN_INTERNAL_CHECK(it != values.end(), "no value for '{}' in an index expression", e.name());
      return it->second;
    }
    case ExprKind::Add: {
      int64_t r = 0;
      for (const Expr& t : e.operands()) r = checked_add(r, evaluate(t, values), what);
      return r;
    }
    case ExprKind::Mul: {
      int64_t r = 1;
      for (const Expr& f : e.operands()) r = checked_mul(r, evaluate(f, values), what);
      return r;
    }
    case ExprKind::FloorDiv: return floordiv_checked(evaluate(e.lhs(), values), evaluate(e.rhs(), values));
    case ExprKind::Mod: {
      int64_t a = evaluate(e.lhs(), values), b = evaluate(e.rhs(), values);
      KILN_INTERNAL_CHECK(b > 0, "index expression takes a modulo by {}, which is not positive", b);
      int64_t r = a % b;
      return r < 0 ? r + b : r;
    }
    case ExprKind::Min: return std::min(evaluate(e.lhs(), values), evaluate(e.rhs(), values));
    case ExprKind::Max: return std::max(evaluate(e.lhs(), values), evaluate(e.rhs(), values));
  }
  internal_error("evaluate: unknown expression kind");
}

std::vector<Expr> free_vars(const Expr& e) { return collect(e, true); }
std::vector<Expr> free_syms(const Expr& e) { return collect(e, false); }

bool depends_on(const Expr& e, const Expr& var_or_sym) {
  if (e == var_or_sym) return true;
  return std::any_of(e.operands().begin(), e.operands().end(),
                     [&](const Expr& o) { return depends_on(o, var_or_sym); });
}

}  // namespace kiln::loops
