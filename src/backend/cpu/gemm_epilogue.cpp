#include "backend/cpu/gemm_epilogue.h"

#include <fmt/format.h>

#include "codegen/cpu/scalar_cpp.h"
#include "schedule/gemm_tail.h"

namespace kiln::backend::cpu {
namespace {

using schedule::LibraryGroup;

std::string expr_cpp(const loops::ScalarExpr& e, const std::vector<std::string>& loads) {
  if (e.kind() == loops::ScalarKind::Load) return loads.at(size_t(e.input()));
  if (e.kind() == loops::ScalarKind::Constant) return codegen::cpu::literal(e.constant_value(), e.dtype());
  std::vector<std::string> operands;
  for (const loops::ScalarExpr& o : e.operands()) operands.push_back(expr_cpp(o, loads));
  return codegen::cpu::operation_cpp(e, operands);
}

// The loads of the tail's operands, extra inputs x{first}, x{first + 1}, ...
void add_tail_loads(const Graph& g, const LibraryGroup& grp, int first, std::vector<std::string>& loads) {
  for (size_t i = 0; i < grp.tail_inputs.size(); ++i) {
    const int x = first + static_cast<int>(i);
    const ValueId v = grp.inputs.at(size_t(grp.tail_inputs[i]));
    loads.push_back(schedule::tail_operand_per_column(g, v) ? fmt::format("x{}[n]", x)
                                                            : fmt::format("x{}[(b * M + m) * N + n]", x));
  }
}

loops::ScalarExpr load0() { return loops::load(0, loops::Expr::constant(0), DType::f32); }

}  // namespace

std::string epilogue_cpp(const loops::ScalarExpr& e, const std::vector<std::string>& loads) {
  if (schedule::is_identity(e)) return "";
  return fmt::format(" v = {};", expr_cpp(e, loads));
}

std::string group_epilogue_cpp(const Graph& g, const LibraryGroup& grp, bool batched) {
  std::vector<std::string> loads = {"v"};
  if (grp.residual >= 0) loads.push_back(batched ? "x0[(b * M + m) * N + n]" : "x0[m * N + n]");
  add_tail_loads(g, grp, grp.residual >= 0 ? 1 : 0, loads);
  return epilogue_cpp(schedule::epilogue_expr(g, grp), loads);
}

std::string tail_cpp(const Graph& g, const LibraryGroup& grp, int first_extra) {
  if (grp.tail.empty()) return "";
  std::vector<std::string> loads = {"v"};
  add_tail_loads(g, grp, first_extra, loads);
  return epilogue_cpp(schedule::tail_expr(g, grp), loads);
}

std::string activation_cpp(schedule::LibraryActivation a) {
  return epilogue_cpp(schedule::activation_expr(a, load0()), {"v"});
}

double activation_fp64(schedule::LibraryActivation a, double v) {
  return schedule::expr_fp64(schedule::activation_expr(a, load0()), {v});
}

}  // namespace kiln::backend::cpu
