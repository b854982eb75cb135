// Scalar expressions of a row kernel as C++ statements (a part of emit_row, see emit_row.h).
//
// A value is either row-level (the same for every element of a row: constants, row leaves, loads
// whose index does not depend on the column) or element-level. Row-level temporaries go to the
// function's prologue, before the column loop, so that they are computed once per row (or per part
// of a split row); element-level temporaries go inside the loop. Equal subtrees share a temporary.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "loops/row_kernel.h"

namespace kiln::codegen::cpu {

// Scalar helpers of row kernels (scalar_prelude() and the reduction steps); the vector math prelude
// (kiln_exp, ...) is added separately.
std::string row_scalar_prelude();

class RowBodyEmitter {
 public:
  // `subs` maps the domain's loop variables to expressions over `o` (the row) and `c` (the column);
  // an index equal to `flat` (the domain's own row-major index) prints as `flat_text`.
  RowBodyEmitter(const loops::CppPrintOptions& print, const loops::ExprMap<loops::Expr>& subs, loops::Expr col_var,
                 loops::Expr flat, std::string flat_text, std::string row_indent, std::string elem_indent);

  // The operand text of e's value: a literal or a temporary (defined by row_lines() or elem_lines()).
  std::string value(const loops::ScalarExpr& e);
  // The subtree `e` (this very node, wherever it is shared) takes `text` instead: an element-level
  // operand.
  void replace(const loops::ScalarExpr& e, std::string text) { replaced_[e.node()] = {std::move(text), false}; }
  // These Exp nodes have arguments proved <= 0 or NaN: they print as kiln_exp_nonpos.
  void set_nonpositive_exps(const std::set<const loops::ScalarNode*>* nodes) { nonpositive_exps_ = nodes; }

  const std::string& row_lines() const { return row_lines_; }
  const std::string& elem_lines() const { return elem_lines_; }
  const std::set<int>& used_inputs() const { return used_inputs_; }
  const std::set<std::string>& used_syms() const { return used_syms_; }
  // Whether the value of `e` is the same for every element of a row.
  bool row_level(const loops::ScalarExpr& e);

 private:
  struct Operand {
    std::string text;
    bool row;
  };
  Operand emit(const loops::ScalarExpr& e);
  Operand emit_new(const loops::ScalarExpr& e);
  Operand index(const loops::Expr& e);

  const loops::CppPrintOptions& print_;
  const loops::ExprMap<loops::Expr>& subs_;
  loops::Expr col_var_, flat_;
  std::string flat_text_, row_indent_, elem_indent_;
  std::map<std::string, Operand> temps_;            // by expression text: equal subtrees share a temporary
  std::map<const loops::ScalarNode*, Operand> replaced_;
  std::map<const loops::ScalarNode*, Operand> done_;  // each shared node is emitted once
  std::map<const loops::ScalarNode*, bool> row_level_;
  const std::set<const loops::ScalarNode*>* nonpositive_exps_ = nullptr;
  std::set<int> used_inputs_;
  std::set<std::string> used_syms_;
  std::string row_lines_, elem_lines_;
  int next_temp_ = 0;
};

}  // namespace kiln::codegen::cpu
