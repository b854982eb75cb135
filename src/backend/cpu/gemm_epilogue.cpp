#include "backend/cpu/gemm_epilogue.h"

#include <cmath>

#include <fmt/format.h>

#include "codegen/cpu/scalar_cpp.h"
#include "schedule/gemm_tail.h"

namespace kiln::backend::cpu {

using schedule::LibraryActivation;
using schedule::LibraryGroup;
using schedule::tail_expr;
using schedule::tail_operand_per_column;

namespace {

std::string expr_cpp(const loops::ScalarExpr& e, const std::vector<std::string>& loads) {
  if (e.kind() == loops::ScalarKind::Load) return loads.at(size_t(e.input()));
  if (e.kind() == loops::ScalarKind::Constant) return codegen::cpu::literal(e.constant_value(), e.dtype());
  std::vector<std::string> operands;
  for (const loops::ScalarExpr& o : e.operands()) operands.push_back(expr_cpp(o, loads));
  return codegen::cpu::operation_cpp(e, operands);
}

}  // namespace

const char* activation_cpp(LibraryActivation a) {
  switch (a) {
    case LibraryActivation::none: return "";
    case LibraryActivation::relu: return "v = v < 0.0f ? 0.0f : v;";  // keeps NaN, as ONNX's Relu
    case LibraryActivation::tanh: return "v = kiln_tanh(v);";
    case LibraryActivation::sigmoid: return "v = kiln_sigmoid(v);";
    case LibraryActivation::gelu_erf: return "v = 0.5f * v * (1.0f + kiln_erf(v * 0x1.6a09e6p-1f));";
    case LibraryActivation::gelu_tanh:
      return "v = 0.5f * v * (1.0f + kiln_tanh(0x1.988454p-1f * (v + 0.044715f * v * v * v)));";
  }
  return "";
}

double activation_fp64(LibraryActivation a, double v) {
  switch (a) {
    case LibraryActivation::none: return v;
    case LibraryActivation::relu: return v < 0 ? 0 : v;
    case LibraryActivation::tanh: return std::tanh(v);
    case LibraryActivation::sigmoid: return 1 / (1 + std::exp(-v));
    case LibraryActivation::gelu_erf: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case LibraryActivation::gelu_tanh: return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return v;
}

std::string tail_cpp(const Graph& g, const LibraryGroup& grp, int first_extra) {
  if (grp.tail.empty()) return "";
  std::vector<std::string> loads = {"v"};
  for (size_t i = 0; i < grp.tail_inputs.size(); ++i) {
    const int x = first_extra + static_cast<int>(i);
    const ValueId v = grp.inputs.at(size_t(grp.tail_inputs[i]));
    loads.push_back(tail_operand_per_column(g, v) ? fmt::format("x{}[n]", x) : fmt::format("x{}[(b * M + m) * N + n]", x));
  }
  return fmt::format(" v = {};", expr_cpp(tail_expr(g, grp), loads));
}

}  // namespace kiln::backend::cpu
