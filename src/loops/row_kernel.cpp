#include "loops/row_kernel.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <set>

#include "loops/index_layout.h"
#include "support/error.h"

namespace kiln::loops {
namespace {

constexpr int kRowLengthInput = kRowLeafBase;
constexpr int kRowResultBase = kRowLeafBase + 1;

// Each shared subtree once: bodies are DAGs (a value used twice is one node), and walking them as
// trees could take exponential time.
void collect_loads(const ScalarExpr& e, std::vector<ScalarExpr>& loads, std::set<const ScalarNode*>& seen) {
  if (!seen.insert(e.node()).second) return;
  if (e.kind() == ScalarKind::Load) loads.push_back(e);
  for (const ScalarExpr& o : e.operands()) collect_loads(o, loads, seen);
}
void collect_loads(const ScalarExpr& e, std::vector<ScalarExpr>& loads) {
  std::set<const ScalarNode*> seen;
  collect_loads(e, loads, seen);
}

Expr product(const std::vector<Expr>& sizes) {
  Expr p(1);
  for (const Expr& s : sizes) p = p * s;
  return simplify(p);
}

bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::string_view row_reduce_name(RowReduceKind k) {
  switch (k) {
    case RowReduceKind::Sum: return "sum";
    case RowReduceKind::Max: return "max";
    case RowReduceKind::Min: return "min";
  }
  return "?";
}

ScalarExpr row_result(int reduction, DType dtype) {
  KILN_INTERNAL_CHECK(reduction >= 0, "row_result({})", reduction);
  return load(kRowResultBase + reduction, Expr(0), dtype);
}

ScalarExpr row_length(DType dtype) {
  KILN_INTERNAL_CHECK(is_float(dtype), "row_length as {}", dtype_name(dtype));
  return load(kRowLengthInput, Expr(0), dtype);
}

bool is_row_leaf(const ScalarExpr& e) { return e.kind() == ScalarKind::Load && e.input() >= kRowLeafBase; }
bool is_row_length(const ScalarExpr& e) { return e.kind() == ScalarKind::Load && e.input() == kRowLengthInput; }
int row_result_index(const ScalarExpr& e) {
  return e.kind() == ScalarKind::Load && e.input() >= kRowResultBase ? e.input() - kRowResultBase : -1;
}

std::vector<Expr> index_vars(const RowKernel& k) {
  std::vector<Expr> vars;
  for (size_t d = 0; d < k.domain.size(); ++d) vars.push_back(Expr::var(fmt::format("x{}", d), k.domain[d]));
  return vars;
}

std::vector<Expr> row_sizes(const RowKernel& k) {
  KILN_INTERNAL_CHECK(k.row_rank >= 0 && static_cast<size_t>(k.row_rank) <= k.domain.size(),
                      "row kernel '{}': row_rank {} of a rank-{} domain", k.name, k.row_rank, k.domain.size());
  return {k.domain.begin(), k.domain.begin() + k.row_rank};
}

std::vector<Expr> col_sizes(const RowKernel& k) {
  row_sizes(k);  // checks row_rank
  return {k.domain.begin() + k.row_rank, k.domain.end()};
}

ScalarExpr load_broadcast(const RowKernel& k, int input) {
  KILN_INTERNAL_CHECK(input >= 0 && static_cast<size_t>(input) < k.inputs.size(), "row kernel '{}' has no input {}",
                      k.name, input);
  const TensorDesc& in = k.inputs[static_cast<size_t>(input)];
  return load(input, broadcast_index(index_vars(k), in.sizes, k.domain), in.dtype);
}

namespace {

std::vector<ScalarExpr> all_loads(const RowKernel& k) {
  std::vector<ScalarExpr> loads;
  std::set<const ScalarNode*> seen;
  for (const RowReduction& r : k.reductions) collect_loads(r.body, loads, seen);
  collect_loads(k.output_body, loads, seen);
  if (k.gather_column) collect_loads(*k.gather_column, loads, seen);
  return loads;
}

}  // namespace

std::vector<Expr> kernel_symbols(const RowKernel& k) {
  std::vector<Expr> syms;
  auto add_syms = [&syms](const Expr& e) {
    for (const Expr& s : free_syms(e)) syms.push_back(s);
  };
  for (const Expr& s : k.domain) add_syms(s);
  for (const Expr& s : k.output.sizes) add_syms(s);
  for (const TensorDesc& in : k.inputs)
    for (const Expr& s : in.sizes) add_syms(s);
  for (const ScalarExpr& l : all_loads(k)) add_syms(l.index());
  std::sort(syms.begin(), syms.end());
  syms.erase(std::unique(syms.begin(), syms.end()), syms.end());
  for (size_t i = 1; i < syms.size(); ++i)
    KILN_INTERNAL_CHECK(syms[i].name() != syms[i - 1].name(), "row kernel '{}': symbol '{}' occurs with two meanings",
                        k.name, syms[i].name());
  return syms;
}

namespace {

// Loads in `e`: real inputs read with indices over the domain's variables (only the row variables
// when `row_only`), row leaves at index 0 naming results below `results_available`.
void check_body(const RowKernel& k, const ScalarExpr& e, size_t results_available, bool row_only, const char* what) {
  std::vector<Expr> vars = index_vars(k);
  std::vector<ScalarExpr> loads;
  collect_loads(e, loads);
  for (const ScalarExpr& l : loads) {
    if (is_row_leaf(l)) {
      KILN_INTERNAL_CHECK(l.index().is_const(0), "row kernel '{}': row leaf read at index {}", k.name,
                          to_string(l.index()));
      if (is_row_length(l)) {
        KILN_INTERNAL_CHECK(is_float(l.dtype()), "row kernel '{}': row length as {}", k.name, dtype_name(l.dtype()));
        continue;
      }
      int r = row_result_index(l);
      KILN_INTERNAL_CHECK(static_cast<size_t>(r) < results_available, "row kernel '{}': {} reads reduction {} of {}",
                          k.name, what, r, results_available);
      KILN_INTERNAL_CHECK(l.dtype() == k.reductions[static_cast<size_t>(r)].body.dtype(),
                          "row kernel '{}': reduction {} read as {}", k.name, r, dtype_name(l.dtype()));
      continue;
    }
    KILN_INTERNAL_CHECK(static_cast<size_t>(l.input()) < k.inputs.size(), "row kernel '{}' loads input {} of {}",
                        k.name, l.input(), k.inputs.size());
    KILN_INTERNAL_CHECK(l.dtype() == k.inputs[static_cast<size_t>(l.input())].dtype,
                        "row kernel '{}': input {} loaded as {}", k.name, l.input(), dtype_name(l.dtype()));
    for (const Expr& v : free_vars(l.index())) {
      auto it = std::find(vars.begin(), vars.end(), v);
      KILN_INTERNAL_CHECK(it != vars.end(), "row kernel '{}': load index {} uses a variable of no loop", k.name,
                          to_string(l.index()));
      KILN_INTERNAL_CHECK(!row_only || it - vars.begin() < k.row_rank,
                          "row kernel '{}': {} reads a reduced dimension ({})", k.name, what, to_string(l.index()));
    }
  }
}

}  // namespace

void validate(const RowKernel& k) {
  KILN_INTERNAL_CHECK(is_identifier(k.name), "kernel name '{}' is not an identifier", k.name);
  for (const TensorDesc& in : k.inputs)
    KILN_INTERNAL_CHECK(pointwise_dtype_supported(in.dtype), "row kernel '{}': input dtype {}", k.name,
                        dtype_name(in.dtype));
  KILN_INTERNAL_CHECK(pointwise_dtype_supported(k.output.dtype), "row kernel '{}': output dtype {}", k.name,
                      dtype_name(k.output.dtype));
  KILN_INTERNAL_CHECK(k.output_body.dtype() == k.output.dtype, "row kernel '{}': output body is {}, output is {}",
                      k.name, dtype_name(k.output_body.dtype()), dtype_name(k.output.dtype));
  std::vector<Expr> rows = row_sizes(k);
  std::vector<Expr> vars = index_vars(k);
  for (const Expr& s : kernel_symbols(k)) {
    KILN_INTERNAL_CHECK(s.name() != "o" && s.name() != "c", "row kernel '{}': symbol '{}' is a reserved name", k.name,
                        s.name());
    for (const Expr& v : vars)
      KILN_INTERNAL_CHECK(s.name() != v.name(), "row kernel '{}': symbol '{}' has a loop variable's name", k.name,
                          s.name());
  }
  for (size_t r = 0; r < k.reductions.size(); ++r) {
    DType t = k.reductions[r].body.dtype();
    KILN_INTERNAL_CHECK(is_float(t), "row kernel '{}': reduction {} of {}", k.name, r,
                        dtype_name(t));
    check_body(k, k.reductions[r].body, r, false, "a reduction");
  }
  bool rows_out = k.output_kind == RowOutput::rows;
  if (k.gather_column) {
    KILN_INTERNAL_CHECK(rows_out, "row kernel '{}': a gather column with an elements output", k.name);
    KILN_INTERNAL_CHECK(k.domain.size() == static_cast<size_t>(k.row_rank) + 1,
                        "row kernel '{}': a gather column needs exactly one reduced dim", k.name);
    DType t = k.gather_column->dtype();
    KILN_INTERNAL_CHECK(t == DType::i32 || t == DType::i64, "row kernel '{}': gather column of {}", k.name,
                        dtype_name(t));
    check_body(k, *k.gather_column, k.reductions.size(), true, "the gather column");
  }
  check_body(k, k.output_body, k.reductions.size(), rows_out && !k.gather_column, "the output");
  Expr want = product(rows_out ? rows : k.domain);
  KILN_INTERNAL_CHECK(product(k.output.sizes) == want, "row kernel '{}': output of {} elements, the {} has {}",
                      k.name, to_string(product(k.output.sizes)), rows_out ? "rows" : "domain", to_string(want));
}

namespace {

// loops::to_string's form, with the row leaves named.
std::string leaf_text(const ScalarExpr& e) {
  if (is_row_length(e)) return "cols";
  if (int r = row_result_index(e); r >= 0) return fmt::format("r{}", r);
  std::string args;
  for (const ScalarExpr& o : e.operands()) args += (args.empty() ? "" : ", ") + leaf_text(o);
  switch (e.kind()) {
    case ScalarKind::Load: return fmt::format("load{}[{}]", e.input(), to_string(e.index()));
    case ScalarKind::Constant: return fmt::format("{}:{}", e.constant_value(), dtype_name(e.dtype()));
    case ScalarKind::Unary: return fmt::format("{}({})", unary_name(e.unary_op()), args);
    case ScalarKind::Binary: return fmt::format("{}({})", binary_name(e.binary_op()), args);
    case ScalarKind::Where: return fmt::format("where({})", args);
    case ScalarKind::Cast: return fmt::format("cast:{}({})", dtype_name(e.dtype()), args);
  }
  return "?";
}

}  // namespace

std::string to_string(const RowKernel& k) {
  auto text = leaf_text;
  std::string out = fmt::format("row kernel {}: rows [", k.name);
  for (int d = 0; d < k.row_rank; ++d) out += (d ? ", " : "") + to_string(k.domain[static_cast<size_t>(d)]);
  out += "] x cols [";
  for (size_t d = static_cast<size_t>(k.row_rank); d < k.domain.size(); ++d)
    out += (d > static_cast<size_t>(k.row_rank) ? ", " : "") + to_string(k.domain[d]);
  out += "]\n";
  for (size_t r = 0; r < k.reductions.size(); ++r)
    out += fmt::format("  r{} = {}({})\n", r, row_reduce_name(k.reductions[r].kind), text(k.reductions[r].body));
  if (k.gather_column) out += fmt::format("  col = {}\n", text(*k.gather_column));
  out += fmt::format("  out[{}] = {}\n", k.gather_column ? "row at col" : k.output_kind == RowOutput::rows ? "row" : "element",
                     text(k.output_body));
  return out;
}

}  // namespace kiln::loops
