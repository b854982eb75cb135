#include "codegen/cpu/emit_row.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

#include "codegen/cpu/emit_row_body.h"
#include "codegen/cpu/scalar_cpp.h"
#include "codegen/cpu/toolchain.h"
#include "codegen/cpu/vector_math.h"
#include "loops/index_layout.h"
#include "support/error.h"

namespace kiln::codegen::cpu {

using loops::Expr;
using loops::RowKernel;
using loops::RowReduceKind;
using loops::ScalarExpr;

namespace {

Expr product(const std::vector<Expr>& sizes) {
  Expr p(1);
  for (const Expr& s : sizes) p = p * s;
  return loops::simplify(p);
}

std::string step_name(RowReduceKind k) {
  switch (k) {
    case RowReduceKind::Sum: return "kiln_sum_step";
    case RowReduceKind::Max: return "kiln_max_step";
    case RowReduceKind::Min: return "kiln_min_step";
  }
  internal_error("row emitter: unknown reduction");
}

std::string init_value(RowReduceKind k, DType t) {
  switch (k) {
    case RowReduceKind::Sum: return literal(0.0, t);
    case RowReduceKind::Max: return literal(-INFINITY, t);
    case RowReduceKind::Min: return literal(INFINITY, t);
  }
  internal_error("row emitter: unknown reduction");
}

// Text with every line's leading `from` spaces turned into `to` spaces.
std::string reindent(const std::string& text, size_t from, size_t to) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end - at);
    out += std::string(to, ' ') + line.substr(std::min(from, line.size())) + "\n";
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// The Exp nodes whose argument is e - r_j, where reduction j is the max of that very node e over the row:
// for every element the argument is <= 0, or NaN (a NaN e or max, inf - inf, -inf - -inf), which
// kiln_exp_nonpos computes exactly (softmax's and log-softmax's exp(x - max)).
std::set<const loops::ScalarNode*> exps_of_nonpositive(const RowKernel& k) {
  std::set<const loops::ScalarNode*> found, seen;
  std::vector<ScalarExpr> stack;
  for (const loops::RowReduction& r : k.reductions) stack.push_back(r.body);
  stack.push_back(k.output_body);
  while (!stack.empty()) {
    ScalarExpr e = stack.back();
    stack.pop_back();
    if (!seen.insert(e.node()).second) continue;
    for (const ScalarExpr& o : e.operands()) stack.push_back(o);
    if (e.kind() != loops::ScalarKind::Unary || e.unary_op() != loops::UnaryOp::Exp) continue;
    const ScalarExpr& arg = e.operands()[0];
    if (arg.kind() != loops::ScalarKind::Binary || arg.binary_op() != loops::BinaryOp::Sub) continue;
    const int j = loops::row_result_index(arg.operands()[1]);
    if (j >= 0 && k.reductions[size_t(j)].kind == RowReduceKind::Max &&
        k.reductions[size_t(j)].body.dtype() == arg.dtype() &&
        arg.operands()[0].node() == k.reductions[size_t(j)].body.node())
      found.insert(e.node());
  }
  return found;
}

// Shared state of one kernel's emission.
struct Emission {
  const RowKernel& k;
  const RowEmitOptions& options;
  loops::CppPrintOptions print;
  std::map<std::string, size_t> sym_slot;
  loops::ExprMap<Expr> subs;  // domain variables -> expressions over o and c
  Expr col_var, flat;
  int stash = -1;           // reduction whose element value the output pass reads back from out[]
  std::optional<ScalarExpr> stash_body;  // its body (the very node the output body shares)
  std::set<const loops::ScalarNode*> nonpositive_exps;  // exp(e - max of e over the row)

  RowBodyEmitter body(const std::string& row_indent, const std::string& elem_indent) const {
    RowBodyEmitter e(print, subs, col_var, flat, "o * cols + c", row_indent, elem_indent);
    e.set_nonpositive_exps(&nonpositive_exps);
    return e;
  }

  // The reduction results a function takes: earlier reductions' values.
  std::string result_params(size_t count) const {
    std::string s;
    for (size_t r = 0; r < count; ++r) s += fmt::format(", const {} r{}", c_type(k.reductions[r].body.dtype()), r);
    return s;
  }

  // Declarations of the inputs and symbols a function body reads, and of the output when it writes.
  std::string prologue(const RowBodyEmitter& e, bool writes_output) const {
    std::string s;
    for (int i : e.used_inputs()) {
      DType t = k.inputs[static_cast<size_t>(i)].dtype;
      s += fmt::format("  const {0}* __restrict in{1} = static_cast<const {0}*>(a.inputs[{1}]);\n", storage_type(t), i);
    }
    if (writes_output)
      s += fmt::format("  {0}* __restrict out = static_cast<{0}*>(a.output);\n", storage_type(k.output.dtype));
    for (const std::string& name : e.used_syms())
      s += fmt::format("  const int64_t s{0} = a.syms[{0}];\n", sym_slot.at(name));
    s += "  [[maybe_unused]] const int64_t cols = a.cols;\n";
    return s;
  }

  std::string reduction_function(size_t r) const {
    const loops::RowReduction& red = k.reductions[r];
    const std::string t = c_type(red.body.dtype()), step = step_name(red.kind), init = init_value(red.kind, red.body.dtype());
    RowBodyEmitter e = body("  ", "      ");
    // Reductions after the stashing one read its stored values back.
    if (stash >= 0 && static_cast<int>(r) > stash) e.replace(*stash_body, "out[o * cols + c]");
    std::string v = e.value(red.body);
    std::string elem = e.elem_lines();
    if (static_cast<int>(r) == stash) elem += fmt::format("      out[o * cols + c] = {};\n", v);
    std::string s = fmt::format("// r{} = {} over the columns [begin, end) of row o.\n", r, loops::row_reduce_name(red.kind));
    s += fmt::format("template <int L>\nstatic inline {} reduce{}(const Args& a, const int64_t o, const int64_t begin, "
                     "const int64_t end{}) {{\n", t, r, result_params(r));
    s += prologue(e, stash >= 0 && static_cast<int>(r) >= stash) + e.row_lines();
    // Max and min lanes take the form of the x86 max/min instruction (one operation, which drops a
    // NaN accumulator) and keep NaNs in lanes of their own, merged back before the combine: a third
    // of the cost of a NaN-keeping step in the loop.
    const bool extremum = red.kind != RowReduceKind::Sum;
    auto lane_lines = [&](const std::string& indent) {
      if (!extremum) return fmt::format("{}acc[j] = {}(acc[j], {});\n", indent, step, v);
      return fmt::format("{0}acc[j] = acc[j] {1} {2} ? acc[j] : {2};\n{0}nan[j] = {2} != {2} ? {2} : nan[j];\n", indent,
                         red.kind == RowReduceKind::Max ? ">" : "<", v);
    };
    s += fmt::format("  {} acc[L];\n  for (int j = 0; j < L; ++j) acc[j] = {};\n", t, init);
    if (extremum) s += fmt::format("  {0} nan[L];\n  for (int j = 0; j < L; ++j) nan[j] = {1};\n", t, literal(0.0, red.body.dtype()));
    s += "  int64_t cb = begin;\n";
    s += "  for (; cb + L <= end; cb += L) {\n#pragma omp simd\n";
    s += "    for (int64_t j = 0; j < L; ++j) {\n      const int64_t c = cb + j;\n";
    s += elem + lane_lines("      ") + "    }\n  }\n";
    // The last (fewer than L) columns go through the same lanes.
    s += "#pragma omp simd\n  for (int64_t j = 0; j < end - cb; ++j) {\n    const int64_t c = cb + j;\n";
    s += reindent(elem, 6, 4) + lane_lines("    ") + "  }\n";
    if (extremum) s += "#pragma omp simd\n  for (int j = 0; j < L; ++j) acc[j] = nan[j] != nan[j] ? nan[j] : acc[j];\n";
    s += fmt::format("  return kiln_tree<{1}, L>(acc, {0}<{1}>);\n}}\n\n", step, t);
    return s;
  }

  std::string output_function() const {
    const bool rows = k.output_kind == loops::RowOutput::rows;
    if (rows && k.gather_column) return gather_function();
    RowBodyEmitter e = body("  ", "    ");
    if (stash >= 0) e.replace(*stash_body, "out[o * cols + c]");
    std::string v = e.value(k.output_body);
    std::string s;
    if (rows) {
      s += fmt::format("// Row o's output value.\nstatic inline void write_row(const Args& a, const int64_t o{}) {{\n",
                       result_params(k.reductions.size()));
      s += prologue(e, true) + e.row_lines() + fmt::format("  out[o] = {};\n}}\n\n", store_cpp(k.output.dtype, v));
      return s;
    }
    s += "// The output's columns [begin, end) of row o.\n";
    s += fmt::format("static inline void write_elements(const Args& a, const int64_t o, const int64_t begin, "
                     "const int64_t end{}) {{\n", result_params(k.reductions.size()));
    s += prologue(e, true) + e.row_lines();
    s += "#pragma omp simd\n  for (int64_t c = begin; c < end; ++c) {\n";
    s += e.elem_lines() + fmt::format("    out[o * cols + c] = {};\n  }}\n}}\n\n", store_cpp(k.output.dtype, v));
    return s;
  }

  // A rows output read at one column per row: the element-level body runs once, at the wrapped
  // column; a column outside [-cols, cols) reads nothing and gives NaN.
  std::string gather_function() const {
    // The column in a block of its own, with the column variable at 0 and no flat-index shortcut
    // (for a width of 1 the index's load would otherwise look like an element-level one).
    loops::ExprMap<Expr> row_subs = subs;
    for (const Expr& v : loops::index_vars(k))
      if (loops::depends_on(subs.at(v), col_var)) row_subs[v] = Expr(0);
    RowBodyEmitter te(print, row_subs, col_var, Expr::var("kiln_no_flat", Expr(2)), "", "    ", "    ");
    std::string tv = te.value(*k.gather_column);
    RowBodyEmitter e = body("  ", "  ");
    std::string v = e.value(k.output_body);
    std::string s = fmt::format("// Row o's output: the body at column t of the row.\n"
                                "static inline void write_row(const Args& a, const int64_t o{}) {{\n",
                                result_params(k.reductions.size()));
    s += "  int64_t t = 0;\n  {\n" + reindent(prologue(te, false), 2, 4) + te.row_lines() + te.elem_lines();
    s += fmt::format("    t = static_cast<int64_t>({});\n  }}\n", tv);
    s += prologue(e, true) + e.row_lines();
    s += "  const int64_t c = t < 0 ? t + cols : t;\n";
    s += fmt::format("  if (c < 0 || c >= cols) {{  // out of range: no read\n    out[o] = {};\n    return;\n  }}\n",
                     store_cpp(k.output.dtype, literal(NAN, k.output.dtype)));
    return s + e.elem_lines() + fmt::format("  out[o] = {};\n}}\n\n", store_cpp(k.output.dtype, v));
  }

  std::string call_args(size_t count, const char* pattern) const {
    std::string s;
    for (size_t r = 0; r < count; ++r) s += ", " + fmt::format(fmt::runtime(pattern), r);
    return s;
  }

  // reduce<r><lanes>: the lane count for this reduction's dtype with `bytes` of accumulators.
  std::string reduce_call(size_t r, int64_t bytes) const {
    const DType t = k.reductions[r].body.dtype();  // accumulated as c_type(t): a half type in float
    return fmt::format("reduce{}<{}>", r, bytes / static_cast<int64_t>(is_half(t) ? 4 : dtype_size(t)));
  }

  std::string per_row_path(const std::string& indent, int64_t bytes) const {
    std::string s = fmt::format("#pragma omp parallel for schedule(static) if (rows * cols >= {})\n",
                                options.parallel_threshold);
    s += indent + "for (int64_t o = 0; o < rows; ++o) {\n";
    for (size_t r = 0; r < k.reductions.size(); ++r)
      s += fmt::format("{}  const {} r{} = {}(a, o, 0, cols{});\n", indent, c_type(k.reductions[r].body.dtype()),
                       r, reduce_call(r, bytes), call_args(r, "r{}"));
    if (k.output_kind == loops::RowOutput::rows)
      s += fmt::format("{}  write_row(a, o{});\n", indent, call_args(k.reductions.size(), "r{}"));
    else
      s += fmt::format("{}  write_elements(a, o, 0, cols{});\n", indent, call_args(k.reductions.size(), "r{}"));
    return s + indent + "}\n";
  }

  std::string split_path(const std::string& in) const {
    const int64_t part = options.split_part_cols;
    std::string s = fmt::format("{0}const int64_t parts = (cols + {1}) / {2};\n{0}const int64_t tasks = rows * parts;\n",
                                in, part - 1, part);
    for (size_t r = 0; r < k.reductions.size(); ++r)
      s += fmt::format("{0}std::vector<{1}> part{2}(static_cast<size_t>(tasks)), res{2}(static_cast<size_t>(rows));\n",
                       in, c_type(k.reductions[r].body.dtype()), r);
    std::string task = fmt::format(
        "{0}    const int64_t o = t / parts, begin = t % parts * {1}, end = kiln_min(begin + {1}, cols);\n", in, part);
    s += "#pragma omp parallel\n" + in + "{\n";
    for (size_t r = 0; r < k.reductions.size(); ++r) {
      const std::string t = c_type(k.reductions[r].body.dtype());
      s += "#pragma omp for schedule(static)\n" + in + "  for (int64_t t = 0; t < tasks; ++t) {\n" + task;
      s += fmt::format("{}    part{}[t] = {}(a, o, begin, end{});\n{}  }}\n", in, r,
                       reduce_call(r, options.accumulator_bytes), call_args(r, "res{}[o]"), in);
      s += "#pragma omp for schedule(static)\n" + in + "  for (int64_t o = 0; o < rows; ++o) {\n";
      s += fmt::format("{0}    {1} acc = part{2}[o * parts];\n", in, t, r);
      s += fmt::format("{0}    for (int64_t p = 1; p < parts; ++p) acc = {1}(acc, part{2}[o * parts + p]);\n", in,
                       step_name(k.reductions[r].kind), r);
      s += fmt::format("{0}    res{1}[o] = acc;\n{0}  }}\n", in, r);
    }
    if (k.output_kind == loops::RowOutput::rows) {
      s += "#pragma omp for schedule(static)\n" + in + "  for (int64_t o = 0; o < rows; ++o)";
      s += fmt::format(" write_row(a, o{});\n", call_args(k.reductions.size(), "res{}[o]"));
    } else {
      s += "#pragma omp for schedule(static)\n" + in + "  for (int64_t t = 0; t < tasks; ++t) {\n" + task;
      s += fmt::format("{}    write_elements(a, o, begin, end{});\n{}  }}\n", in,
                       call_args(k.reductions.size(), "res{}[o]"), in);
    }
    return s + in + "}\n";
  }
};

// The last reduction whose (element-level, computed) body is a node of an elements output body with
// the output's dtype. Nodes are compared by identity: fuse_rows builds each value once and shares it.
void choose_stash(Emission& em) {
  if (em.k.output_kind != loops::RowOutput::elements) return;
  std::set<const loops::ScalarNode*> subtrees;
  auto collect = [&subtrees](auto&& self, const ScalarExpr& e) -> void {
    if (!subtrees.insert(e.node()).second) return;
    for (const ScalarExpr& o : e.operands()) self(self, o);
  };
  collect(collect, em.k.output_body);
  RowBodyEmitter probe = em.body("", "");
  for (size_t r = em.k.reductions.size(); r-- > 0;) {
    const ScalarExpr& b = em.k.reductions[r].body;
    // A plain load is as cheap to read again as the stored copy.
    bool computed = b.kind() != loops::ScalarKind::Load;
    // A half output stores rounded values: reading them back would differ from the float it computed.
    if (computed && !is_half(b.dtype()) && b.dtype() == em.k.output.dtype && subtrees.count(b.node()) && !probe.row_level(b)) {
      em.stash = static_cast<int>(r);
      em.stash_body = b;
      return;
    }
  }
}

}  // namespace

RowSource emit_row_cpp(const RowKernel& k, const RowEmitOptions& options) {
  loops::validate(k);
  auto lanes_ok = [](int64_t bytes) { return bytes >= 8 && (bytes & (bytes - 1)) == 0; };
  KILN_INTERNAL_CHECK(options.parallel_threshold >= 0 && options.split_min_cols > 0 && options.split_part_cols > 0 &&
                          lanes_ok(options.accumulator_bytes) && lanes_ok(options.short_row_accumulator_bytes),
                      "bad row emit options");
  KILN_INTERNAL_CHECK(k.name.rfind("kiln_", 0) != 0, "kernel name '{}' would clash with the helpers", k.name);
  Emission em{k, options, {}, {}, {}, {}, {}, -1, std::nullopt, exps_of_nonpositive(k)};
  RowSource result;
  std::vector<Expr> syms = loops::kernel_symbols(k);
  for (const Expr& s : syms) {
    em.sym_slot.emplace(s.name(), result.symbols.size());
    result.symbols.push_back(s.name());
  }
  // Symbols print as s<slot> (their names need not be C identifiers), variables by their names.
  em.print.leaf_name = [&em](const Expr& e) { return e.is_sym() ? fmt::format("s{}", em.sym_slot.at(e.name())) : e.name(); };
  auto cpp = [&em](const Expr& e) { return loops::to_cpp(loops::simplify(e), em.print); };

  const std::vector<Expr> rows = loops::row_sizes(k), cols = loops::col_sizes(k);
  const Expr rows_extent = product(rows), cols_extent = product(cols);
  const bool elements = k.output_kind == loops::RowOutput::elements;

  std::string code(kKernelExportPrelude);
  code += fmt::format("// Row kernel '{}', generated by kiln: rows of {} x {} columns; ", k.name,
                      loops::to_string(rows_extent), loops::to_string(cols_extent));
  for (size_t r = 0; r < k.reductions.size(); ++r)
    code += fmt::format("r{} = {} ({}), ", r, loops::row_reduce_name(k.reductions[r].kind),
                        dtype_name(k.reductions[r].body.dtype()));
  code += elements ? "an output per element\n" : "an output per row\n";
  for (size_t j = 0; j < syms.size(); ++j) code += fmt::format("// syms[{}] = {}\n", j, syms[j].name());
  const std::string signature =
      fmt::format("KILN_EXPORT void {}(const void* const* inputs, void* output, const int64_t* syms)", k.name);
  code += loops::cpp_index_prelude();  // first: even an empty kernel's signature needs <stdint.h>
  bool no_work = std::any_of(rows.begin(), rows.end(), [](const Expr& d) { return d.is_const(0); }) ||
                 (elements && cols_extent.is_const(0));
  if (no_work) {  // a constant zero size: nothing to do (and delinearising by it would divide by zero)
    code += "\n" + signature + " {\n  (void)inputs;\n  (void)output;\n  (void)syms;\n}\n";
    result.source = {k.name, std::move(code), {k.name}};
    return result;
  }
  code += row_scalar_prelude();
  std::vector<ScalarExpr> roots = {k.output_body};
  for (const loops::RowReduction& r : k.reductions) roots.push_back(r.body);
  if (k.gather_column) roots.push_back(*k.gather_column);
  if (touches_half(k.inputs, k.output.dtype, roots)) code += half_prelude();
  code += vector_math_prelude();

  const Expr o = Expr::var("o", rows_extent);
  em.col_var = Expr::var("c", cols_extent);
  std::vector<Expr> vars = loops::index_vars(k);
  std::vector<Expr> row_idx = loops::delinearize(o, rows);
  std::vector<Expr> col_idx = cols_extent.is_const(0) ? std::vector<Expr>(cols.size(), Expr(0))
                                                      : loops::delinearize(em.col_var, cols);
  for (size_t d = 0; d < vars.size(); ++d)
    em.subs.emplace(vars[d], d < rows.size() ? row_idx[d] : col_idx[d - rows.size()]);
  em.flat = loops::linear_index(vars, loops::row_major_strides(k.domain));
  choose_stash(em);

  code += "\nnamespace {\n\nstruct Args {\n  const void* const* inputs;\n  void* output;\n  const int64_t* syms;\n";
  code += "  int64_t rows, cols;\n};\n\n";
  for (size_t r = 0; r < k.reductions.size(); ++r) code += em.reduction_function(r);
  code += em.output_function();
  code += "}  // namespace\n\n" + signature + " {\n";
  for (size_t j = 0; j < syms.size(); ++j) code += fmt::format("  const int64_t s{} = syms[{}];\n", j, j);
  code += fmt::format("  const int64_t rows = {};\n  const int64_t cols = {};\n", cpp(rows_extent), cpp(cols_extent));
  code += elements ? "  if (rows <= 0 || cols <= 0) return;  // no elements: touch nothing\n"
                   : "  if (rows <= 0) return;  // no rows: touch nothing\n";
  code += "  const Args a{inputs, output, syms, rows, cols};\n";
  // Per row: one vector of lanes for short rows (its combine is short), several for long ones.
  auto per_row = [&](const std::string& indent) {
    const int64_t limit = options.short_row_cols;
    if (cols_extent.is_const())
      return em.per_row_path(indent, cols_extent.value() < limit ? options.short_row_accumulator_bytes
                                                                  : options.accumulator_bytes);
    std::string s = fmt::format("{}if (cols < {}) {{\n", indent, limit);
    s += em.per_row_path(indent + "  ", options.short_row_accumulator_bytes);
    s += fmt::format("{0}  return;\n{0}}}\n", indent);
    return s + em.per_row_path(indent, options.accumulator_bytes);
  };
  const bool may_split = !cols_extent.is_const() || cols_extent.value() >= options.split_min_cols;
  const bool may_per_row = !cols_extent.is_const() || cols_extent.value() < options.split_min_cols;
  if (may_split && may_per_row) {
    code += fmt::format("  if (cols < {}) {{  // (a) one row per iteration\n", options.split_min_cols);
    code += per_row("    ");
    code += "    return;\n  }\n  // (b) rows split into parts across the threads\n";
    code += em.split_path("  ");
  } else if (may_per_row) {
    code += per_row("  ");
  } else {
    code += em.split_path("  ");
  }
  code += "}\n";
  result.source = {k.name, std::move(code), {k.name}};
  return result;
}

}  // namespace kiln::codegen::cpu
