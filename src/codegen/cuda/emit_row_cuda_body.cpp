#include "codegen/cuda/emit_row_cuda_body.h"

#include <fmt/format.h>

#include "codegen/cuda/scalar_cuda.h"
#include "support/error.h"

namespace kiln::codegen::cuda {

using loops::Expr;
using loops::ScalarExpr;
using loops::ScalarKind;

CudaRowBody::CudaRowBody(const loops::CppPrintOptions& print, const loops::ExprMap<Expr>& subs, Expr col_var,
                         Expr flat, std::string flat_text, std::string row_indent, std::string elem_indent)
    : print_(print),
      subs_(subs),
      col_var_(std::move(col_var)),
      flat_(loops::simplify(flat)),
      flat_text_(std::move(flat_text)),
      row_indent_(std::move(row_indent)),
      elem_indent_(std::move(elem_indent)) {}

std::string CudaRowBody::value(const ScalarExpr& e) { return emit(e).text; }

CudaRowBody::Operand CudaRowBody::index(const Expr& e) {
  Expr simple = loops::simplify(e);
  if (simple == flat_) return {flat_text_, false};
  Expr mapped = loops::simplify(loops::substitute(simple, subs_));
  return {loops::to_cpp(mapped, print_), !loops::depends_on(mapped, col_var_)};
}

bool CudaRowBody::row_level(const ScalarExpr& e) {
  if (auto it = row_level_.find(e.node()); it != row_level_.end()) return it->second;
  bool row = true;
  if (e.kind() == ScalarKind::Load && !loops::is_row_leaf(e)) {
    Expr simple = loops::simplify(e.index());
    row = simple != flat_ && !loops::depends_on(loops::simplify(loops::substitute(simple, subs_)), col_var_);
  }
  for (const ScalarExpr& o : e.operands()) row = row_level(o) && row;
  return row_level_[e.node()] = row;
}

CudaRowBody::Operand CudaRowBody::emit(const ScalarExpr& e) {
  if (auto it = done_.find(e.node()); it != done_.end()) return it->second;
  Operand result = emit_new(e);
  done_.emplace(e.node(), result);
  return result;
}

CudaRowBody::Operand CudaRowBody::emit_new(const ScalarExpr& e) {
  if (e.kind() == ScalarKind::Constant) return {cuda_literal(e.constant_value(), e.dtype()), true};
  if (int r = loops::row_result_index(e); r >= 0) return {fmt::format("r{}", r), true};
  std::string text;
  bool row = true;
  int stash_to = -1;  // this pass loads the value from memory and keeps it in kiln_stash<n>
  if (loops::is_row_length(e)) {
    text = fmt::format("(({})cols)", cuda_type(e.dtype()));
  } else if (e.kind() == ScalarKind::Load) {
    Operand at = index(e.index());
    text = cuda_load(e.input(), e.dtype(), at.text);
    row = at.row;
    if (!row) {
      element_loads_.emplace(text, cuda_type(e.dtype()));  // an input has one type: the text names the load
      if (stash_) {
        if (auto it = stash_->index.find(text); it != stash_->index.end()) {
          if (stash_->first_pass.at(text) == pass_) stash_to = it->second;
          else text = fmt::format("kiln_stash{}[kiln_slot]", it->second);
        }
      }
    }
  } else {
    std::vector<std::string> a;
    for (const ScalarExpr& o : e.operands()) {
      Operand op = emit(o);
      a.push_back(op.text);
      row = row && op.row;
    }
    text = cuda_operation(e, a);
  }
  std::string key = cuda_type(e.dtype()) + " " + text;
  if (auto it = temps_.find(key); it != temps_.end()) return it->second;
  Operand temp{fmt::format("v{}", next_temp_++), row};
  (row ? row_lines_ : elem_lines_) +=
      fmt::format("{}const {} {} = {};\n", row ? row_indent_ : elem_indent_, cuda_type(e.dtype()), temp.text, text);
  if (stash_to >= 0) elem_lines_ += fmt::format("{}kiln_stash{}[kiln_slot] = {};\n", elem_indent_, stash_to, temp.text);
  temps_.emplace(std::move(key), temp);
  return temp;
}

}  // namespace kiln::codegen::cuda
