// Scalar expressions of a CUDA row kernel as statements (a part of emit_row_cuda, see emit_row_cuda.h),
// the twin of codegen/cpu/emit_row_body.h.
//
// A value is row-level (the same for every element of a row: constants, row leaves, loads whose index
// does not depend on the column) or element-level. Row-level temporaries go before a pass's column loop
// (computed once per row by each thread), element-level ones inside it. Equal subtrees share a
// temporary; each shared node is emitted once.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loops/row_kernel.h"

namespace kiln::codegen::cuda {

// Element-level loads that several passes of a row kernel read, kept in registers: the first pass that
// loads one also writes it to kiln_stash<n>[kiln_slot] (a per-lane array, registers once the slot loop
// is unrolled), the later passes read it there instead of memory. Keyed by the load's typed text.
struct CudaRowStash {
  std::map<std::string, int> index;       // load -> n
  std::map<std::string, int> first_pass;  // load -> the pass that loads it from memory
};

class CudaRowBody {
 public:
  // `subs` maps the domain's loop variables to expressions over `o` (the row) and `c` (the column); an
  // index equal to `flat` (the domain's own row-major index) prints as `flat_text`.
  CudaRowBody(const loops::CppPrintOptions& print, const loops::ExprMap<loops::Expr>& subs, loops::Expr col_var,
              loops::Expr flat, std::string flat_text, std::string row_indent, std::string elem_indent);

  // The operand text of e's value: a literal, a row result r<k> or a temporary v<n> (defined by
  // row_lines() or elem_lines()).
  std::string value(const loops::ScalarExpr& e);
  const std::string& row_lines() const { return row_lines_; }
  const std::string& elem_lines() const { return elem_lines_; }
  // Whether e's value is the same for every element of a row.
  bool row_level(const loops::ScalarExpr& e);
  // Pass `pass` of a kernel whose stashed loads `stash` lists (set before the first value()).
  void use_stash(const CudaRowStash* stash, int pass) {
    stash_ = stash;
    pass_ = pass;
  }
  // The element-level loads this body read so far (their text: CudaRowStash's keys), with their value types.
  const std::map<std::string, std::string>& element_loads() const { return element_loads_; }

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
  std::map<std::string, Operand> temps_;              // by expression text
  std::map<const loops::ScalarNode*, Operand> done_;  // by node
  std::map<const loops::ScalarNode*, bool> row_level_;
  std::string row_lines_, elem_lines_;
  int next_temp_ = 0;
  const CudaRowStash* stash_ = nullptr;
  int pass_ = 0;
  std::map<std::string, std::string> element_loads_;
};

}  // namespace kiln::codegen::cuda
