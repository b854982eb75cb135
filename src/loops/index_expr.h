// Index expressions of the loop-level IR: integer arithmetic over loop variables and symbolic sizes.
//
// An Expr is immutable and value-semantic (a shared pointer to a node with a cached hash). The
// constructors below always return canonical forms: sums and products are kept as expanded
// polynomials (flattened, constants folded, like terms c1*x + c2*x combined, terms sorted), and
// floor division / modulo apply only identities that hold for every integer value. Everything that
// needs knowledge about values (0 <= x < n, ...) lives in simplify(), which uses range proofs only:
// a loop variable's range is [0, extent), a size symbol's is [min_value, +inf). Hints are never
// consulted, so a term is dropped only when it is proven to be zero.
//
// Semantics: FloorDiv and Mod are floor division and floor modulo (Python's // and %), defined for a
// positive divisor; it is the caller's contract that every divisor is positive wherever the
// expression is evaluated (a divisor that is a known constant <= 0 is rejected at construction).
#pragma once
#include <concepts>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln {
struct Dim;
}

namespace kiln::loops {

enum class ExprKind : uint8_t { Const, Var, Sym, Add, Mul, FloorDiv, Mod, Min, Max };
std::string_view kind_name(ExprKind k);

class Expr;
struct ExprNode;

class Expr {
 public:
  Expr();  // the constant 0
  // Implicit from any integer, so that `x * 768 + 1` reads naturally.
  template <std::integral T>
  Expr(T value) : Expr(constant(static_cast<int64_t>(value))) {}  // NOLINT

  static Expr constant(int64_t value);

  // A loop variable ranging over [0, extent).
  static Expr var(std::string name, Expr extent);
  // A named symbolic size ("batch", "seq"); min_value is what range proofs may assume (0 or 1 for a
  // size that can be empty or not). The hint is carried for the emitter and never used in proofs.
  static Expr sym(std::string name, int64_t hint = -1, int64_t min_value = 0);

  ExprKind kind() const;
  bool is_const() const { return kind() == ExprKind::Const; }
  bool is_const(int64_t v) const { return is_const() && value() == v; }
  bool is_var() const { return kind() == ExprKind::Var; }
  bool is_sym() const { return kind() == ExprKind::Sym; }
  int64_t value() const;                     // Const
  const std::string& name() const;           // Var, Sym
  const Expr& extent() const;                // Var
  int64_t hint() const;                      // Sym (-1 if none)
  int64_t min_value() const;                 // Sym
  const std::vector<Expr>& operands() const; // Add terms, Mul factors, {a, b} of the binary kinds
  const Expr& lhs() const { return operands().at(0); }
  const Expr& rhs() const { return operands().at(1); }

  size_t hash() const;
  bool operator==(const Expr& o) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }
  // A total, deterministic order (kind, then names in natural order, then operands).
  friend int compare(const Expr& a, const Expr& b);
  bool operator<(const Expr& o) const { return compare(*this, o) < 0; }

  const ExprNode* node() const { return node_.get(); }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const ExprNode> node_;
  friend Expr make_node(ExprNode n);
};

int compare(const Expr& a, const Expr& b);

struct ExprNode {
  ExprKind kind = ExprKind::Const;
  int64_t value = 0;  // Const: the value; Sym: the minimum
  int64_t hint = -1;  // Sym
  std::string name;   // Var, Sym
  std::vector<Expr> ops;  // Var: {extent}; Add: terms; Mul: factors; binary kinds: {a, b}
  size_t hash = 0;
};

struct ExprHash {
  size_t operator()(const Expr& e) const { return e.hash(); }
};
template <class V>
using ExprMap = std::unordered_map<Expr, V, ExprHash>;

// Canonicalising constructors.
Expr add(const std::vector<Expr>& terms);
Expr mul(const std::vector<Expr>& factors);
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr ceildiv(const Expr& a, const Expr& b);  // (a + b - 1) // b
Expr minimum(const Expr& a, const Expr& b);
Expr maximum(const Expr& a, const Expr& b);
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator*(const Expr& a, const Expr& b);

// A graph dimension as an index expression: a constant, or a size symbol with the dim's hint.
Expr from_dim(const Dim& d, int64_t sym_min_value = 0);

// Bounds of an expression; kNegInf / kPosInf stand for "unbounded".
inline constexpr int64_t kNegInf = INT64_MIN;
inline constexpr int64_t kPosInf = INT64_MAX;
struct Bounds {
  int64_t lo = kNegInf, hi = kPosInf;
  bool is_point() const { return lo == hi && lo != kNegInf && lo != kPosInf; }
  bool operator==(const Bounds&) const = default;
};
// Interval analysis: vars in [0, max(extent) - 1], symbols in [min_value, +inf).
Bounds bounds(const Expr& e);
// True only if e >= 0 at every point (a sound, incomplete proof: intervals plus elimination of
// variables, symbols and divisions at their symbolic bounds).
bool prove_nonneg(const Expr& e);
bool prove_lt(const Expr& a, const Expr& b);  // a < b everywhere
bool prove_le(const Expr& a, const Expr& b);  // a <= b everywhere

// Range-based simplification (see the top of this file); the result evaluates equal to e at every
// point where the variables are within their ranges and every divisor is positive.
Expr simplify(const Expr& e);

// Replaces every subexpression equal to a key (usually variables or symbols) and re-canonicalises.
Expr substitute(const Expr& e, const ExprMap<Expr>& replacements);
// Value at a point: `values` maps variable and symbol names to integers (names are shared between
// the two kinds, so one kernel must not reuse a name). Missing names and overflow are errors.
int64_t evaluate(const Expr& e, const std::unordered_map<std::string, int64_t>& values);
// Distinct variables / symbols occurring in e, in canonical order. Symbols include those that
// occur only in variables' extents.
std::vector<Expr> free_vars(const Expr& e);
std::vector<Expr> free_syms(const Expr& e);
bool depends_on(const Expr& e, const Expr& var_or_sym);

// Readable form for messages and tests: (x0 * 768 + x1), x // 4, x % 4, min(a, b), max(a, b).
std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

// C++ source text for int64_t arithmetic. Floor division and modulo print as plain `/` and `%` when
// the numerator is proven non-negative, else as kiln_floordiv(a, b) / kiln_mod(a, b); Min and Max
// print as kiln_min / kiln_max. Those helpers are defined by cpp_index_prelude().
struct CppPrintOptions {
  // Spelling of a variable or symbol (default: its name).
  std::function<std::string(const Expr&)> leaf_name;
};
std::string to_cpp(const Expr& e, const CppPrintOptions& options = {});
std::string_view cpp_index_prelude();

}  // namespace kiln::loops
