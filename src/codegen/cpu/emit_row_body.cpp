#include "codegen/cpu/emit_row_body.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "codegen/cpu/scalar_cpp.h"
#include "support/error.h"

namespace kiln::codegen::cpu {

using loops::BinaryOp;
using loops::Expr;
using loops::ScalarExpr;
using loops::ScalarKind;
using loops::UnaryOp;

// The shared scalar helpers plus the reduction steps. The steps keep a NaN accumulator (v > NaN is
// false) and take a NaN element, so that one NaN anywhere in a row gives NaN.
std::string row_scalar_prelude() {
  return std::string(scalar_prelude()) + R"(#include <vector>
template <class T> static inline T kiln_sum_step(T acc, T v) { return acc + v; }
template <class T> static inline T kiln_max_step(T acc, T v) { return (v > acc || v != v) ? v : acc; }
template <class T> static inline T kiln_min_step(T acc, T v) { return (v < acc || v != v) ? v : acc; }
// acc[0] combined with acc[1..N) pairwise (a fixed order: the result does not depend on threads);
// one loop of constant length per level, so that each level compiles to a few vector operations.
template <class T, int W, class Step> static inline void kiln_fold(T* acc, Step step) {
  if constexpr (W >= 1) {
    for (int j = 0; j < W; ++j) acc[j] = step(acc[j], acc[j + W]);
    kiln_fold<T, W / 2>(acc, step);
  }
}
template <class T, int N, class Step> static inline T kiln_tree(T* acc, Step step) {
  kiln_fold<T, N / 2>(acc, step);
  return acc[0];
}
)";
}

RowBodyEmitter::RowBodyEmitter(const loops::CppPrintOptions& print, const loops::ExprMap<Expr>& subs, Expr col_var,
                               Expr flat, std::string flat_text, std::string row_indent, std::string elem_indent)
    : print_(print),
      subs_(subs),
      col_var_(std::move(col_var)),
      flat_(loops::simplify(flat)),
      flat_text_(std::move(flat_text)),
      row_indent_(std::move(row_indent)),
      elem_indent_(std::move(elem_indent)) {}

std::string RowBodyEmitter::value(const ScalarExpr& e) { return emit(e).text; }

RowBodyEmitter::Operand RowBodyEmitter::index(const Expr& e) {
  Expr simple = loops::simplify(e);
  if (simple == flat_) return {flat_text_, false};
  Expr mapped = loops::simplify(loops::substitute(simple, subs_));
  for (const Expr& s : loops::free_syms(mapped)) used_syms_.insert(s.name());
  return {loops::to_cpp(mapped, print_), !loops::depends_on(mapped, col_var_)};
}

bool RowBodyEmitter::row_level(const ScalarExpr& e) {
  if (auto it = row_level_.find(e.node()); it != row_level_.end()) return it->second;
  bool row = true;
  if (e.kind() == ScalarKind::Load && !loops::is_row_leaf(e)) {
    Expr simple = loops::simplify(e.index());
    row = simple != flat_ && !loops::depends_on(loops::simplify(loops::substitute(simple, subs_)), col_var_);
  }
  for (const ScalarExpr& o : e.operands()) row = row_level(o) && row;
  return row_level_[e.node()] = row;
}

RowBodyEmitter::Operand RowBodyEmitter::emit(const ScalarExpr& e) {
  if (auto it = replaced_.find(e.node()); it != replaced_.end()) return it->second;
  if (auto it = done_.find(e.node()); it != done_.end()) return it->second;
  Operand result = emit_new(e);
  done_.emplace(e.node(), result);
  return result;
}

RowBodyEmitter::Operand RowBodyEmitter::emit_new(const ScalarExpr& e) {
  if (e.kind() == ScalarKind::Constant) return {literal(e.constant_value(), e.dtype()), true};
  std::string text;
  bool row = true;
  if (loops::is_row_length(e)) {
    text = row_length_cpp(e.dtype());
  } else if (int r = loops::row_result_index(e); r >= 0) {
    return {fmt::format("r{}", r), true};  // a parameter of the function
  } else if (e.kind() == ScalarKind::Load) {
    Operand at = index(e.index());
    used_inputs_.insert(e.input());
    // bool data is read as bytes: GCC 12 does not vectorise loads of `bool` (an 8-bit mask type to it).
    text = load_cpp(e.input(), e.dtype(), at.text);
    row = at.row;
  } else {
    std::vector<std::string> a;
    for (const ScalarExpr& o : e.operands()) {
      Operand op = emit(o);
      a.push_back(op.text);
      row = row && op.row;
    }
    if (e.kind() == ScalarKind::Unary && e.unary_op() == UnaryOp::Exp && nonpositive_exps_ &&
        nonpositive_exps_->count(e.node()))
      text = fmt::format("kiln_exp_nonpos({})", a[0]);
    else
      text = operation_cpp(e, a);
  }
  std::string key = c_type(e.dtype()) + " " + text;
  if (auto it = temps_.find(key); it != temps_.end()) return it->second;
  Operand temp{fmt::format("v{}", next_temp_++), row};
  (row ? row_lines_ : elem_lines_) +=
      fmt::format("{}const {} {} = {};\n", row ? row_indent_ : elem_indent_, c_type(e.dtype()), temp.text, text);
  temps_.emplace(std::move(key), temp);
  return temp;
}

}  // namespace kiln::codegen::cpu
