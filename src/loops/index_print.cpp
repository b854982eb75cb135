// Printing: a readable form and C++ source text.
#include <ostream>

#include "loops/index_expr.h"
#include "loops/index_poly.h"

namespace kiln::loops {

namespace {

std::string integer(int64_t v) {
  // -9223372036854775808 is not a C++ literal (the minus applies to an out-of-range positive one).
  if (v == kNegInf) return "(-9223372036854775807 - 1)";
  return std::to_string(v);
}

class Printer {
 public:
  Printer(bool cpp, const CppPrintOptions& options) : cpp_(cpp), options_(options) {}

  std::string print(const Expr& e) const { return print(e, false); }

 private:
  // in_sum: a product directly inside a sum needs no parentheses.
  std::string print(const Expr& e, bool in_sum) const {
    switch (e.kind()) {
      case ExprKind::Const: return integer(e.value());
      case ExprKind::Var:
      case ExprKind::Sym: return options_.leaf_name ? options_.leaf_name(e) : e.name();
      case ExprKind::Add: return sum(e);
      case ExprKind::Mul: {
        std::string s;
        for (const Expr& f : e.operands()) s += (s.empty() ? "" : " * ") + print(f, false);
        return in_sum ? s : "(" + s + ")";
      }
      case ExprKind::FloorDiv: return division(e, "/", "//", "kiln_floordiv");
      case ExprKind::Mod: return division(e, "%", "%", "kiln_mod");
      case ExprKind::Min: return call(cpp_ ? "kiln_min" : "min", e);
      case ExprKind::Max: return call(cpp_ ? "kiln_max" : "max", e);
    }
    return "?";
  }

  // Terms with a negative coefficient print as subtraction: (x0 - x1 * 2 - 5).
  std::string sum(const Expr& e) const {
    std::string s = "(";
    bool first = true;
    for (const Expr& t : e.operands()) {
      auto m = detail::as_monomial(t);
      bool negative = m && m->coeff < 0 && m->coeff != kNegInf;
      Expr shown = negative ? detail::from_monomial({-m->coeff, m->atoms}) : t;
      if (first) s += negative ? "-" : "";
      else s += negative ? " - " : " + ";
      s += print(shown, true);
      first = false;
    }
    return s + ")";
  }

  std::string division(const Expr& e, const char* cpp_op, const char* text_op, const char* helper) const {
    std::string a = print(e.lhs(), false), b = print(e.rhs(), false);
    if (!cpp_) return "(" + a + " " + text_op + " " + b + ")";
    // C++ truncates towards zero; that agrees with floor semantics only for a >= 0 (b > 0).
    if (prove_nonneg(e.lhs())) return "(" + a + " " + cpp_op + " " + b + ")";
    return std::string(helper) + "(" + a + ", " + b + ")";
  }

  std::string call(const char* fn, const Expr& e) const {
    return std::string(fn) + "(" + print(e.lhs(), false) + ", " + print(e.rhs(), false) + ")";
  }

  bool cpp_;
  const CppPrintOptions& options_;
};

}  // namespace

std::string to_string(const Expr& e) { return Printer(false, {}).print(e); }

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }

std::string to_cpp(const Expr& e, const CppPrintOptions& options) { return Printer(true, options).print(e); }

std::string_view cpp_index_prelude() {
  return R"(#include <stdint.h>
// Floor division and modulo for a positive divisor (C++ '/' and '%' truncate towards zero).
static inline int64_t kiln_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static inline int64_t kiln_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}
static inline int64_t kiln_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kiln_max(int64_t a, int64_t b) { return a > b ? a : b; }
)";
}

}  // namespace kiln::loops
