#include "codegen/cuda/emit_row_cuda.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

#include "codegen/cuda/emit_row_cuda_body.h"
#include "codegen/cuda/scalar_cuda.h"
#include "loops/index_layout.h"
#include "support/error.h"

namespace kiln::codegen::cuda {

using loops::Expr;
using loops::RowKernel;
using loops::RowReduceKind;
using loops::ScalarExpr;

int64_t CudaRowLaunch::blocks(int64_t rows, int64_t cols) const {
  KILN_INTERNAL_CHECK(rows >= 0 && cols >= 0, "CUDA row launch: {} rows of {} columns", rows, cols);
  KILN_INTERNAL_CHECK(threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0,
                      "CUDA row launch: {} threads per block", threads_per_block);
  KILN_INTERNAL_CHECK(rows_per_block == 1 || rows_per_block == threads_per_block / 32,
                      "CUDA row launch: {} rows per block of {} threads", rows_per_block, threads_per_block);
  return std::min(rows / rows_per_block + (rows % rows_per_block != 0), kMaxBlocks);
}

std::string_view cuda_row_preamble() {
  return R"(#ifndef KILN_CUDA_ROW_PREAMBLE
#define KILN_CUDA_ROW_PREAMBLE
// Block reductions of kiln's row kernels (needs the scalar preamble).
struct kiln_sum_op { template <class T> KILN_DEV static T apply(T a, T b) { return a + b; } };
struct kiln_max_op { template <class T> KILN_DEV static T apply(T a, T b) { return kiln_max_nan(a, b); } };
struct kiln_min_op { template <class T> KILN_DEV static T apply(T a, T b) { return kiln_min_nan(a, b); } };
// v combined over the whole block, returned to every thread: a butterfly within each warp (every lane
// ends with the same value), then the warps' values in warp order. Every thread of the block must call
// it (blockDim.x a multiple of 32); partial: 32 elements of shared memory.
template <class Op, class T> KILN_DEV T kiln_block_reduce(T v, T* partial) {
  for (int d = 16; d > 0; d /= 2) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, d));
  const unsigned warps = blockDim.x / 32;
  __syncthreads();  // the previous reduction's readers are done with partial
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  T r = partial[0];
  for (unsigned w = 1; w < warps; ++w) r = Op::apply(r, partial[w]);
  return r;
}
// v combined over the warp, returned to every lane (a butterfly). Every lane of the warp must call it.
template <class Op, class T> KILN_DEV T kiln_warp_reduce(T v) {
  for (int d = 16; d > 0; d /= 2) v = Op::apply(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}
#endif  // KILN_CUDA_ROW_PREAMBLE
)";
}

namespace {

Expr product(const std::vector<Expr>& sizes) {
  Expr p(1);
  for (const Expr& s : sizes) p = p * s;
  return loops::simplify(p);
}

const char* combine_op(RowReduceKind k) {
  switch (k) {
    case RowReduceKind::Sum: return "kiln_sum_op";
    case RowReduceKind::Max: return "kiln_max_op";
    case RowReduceKind::Min: return "kiln_min_op";
  }
  internal_error("CUDA row emitter: unknown reduction");
}

std::string identity(RowReduceKind k, DType t) {
  switch (k) {
    case RowReduceKind::Sum: return cuda_literal(0.0, t);
    case RowReduceKind::Max: return cuda_literal(-INFINITY, t);
    case RowReduceKind::Min: return cuda_literal(INFINITY, t);
  }
  internal_error("CUDA row emitter: unknown reduction");
}

std::string describe(const loops::TensorDesc& t) {
  std::string dims;
  for (const Expr& d : t.sizes) dims += (dims.empty() ? "" : ", ") + loops::to_string(d);
  return fmt::format("{} [{}]", dtype_name(t.dtype), dims);
}

// Row kernel text inside the row loop (indent 4: the loop's body).
struct Emission {
  const RowKernel& k;
  loops::CppPrintOptions print;
  loops::ExprMap<Expr> subs;  // domain variables -> expressions over o and c
  Expr col_var, flat;
  bool warp = false;                 // one warp per row, else one block
  std::optional<int64_t> const_cols;  // the row's width when it is a constant (warp: unrolled slots)

  // The column loop's head (indent 6; the body at 8 closes it with "      }"): this thread's columns.
  std::string column_loop() const {
    if (!warp) return "      for (long long c = threadIdx.x; c < cols; c += blockDim.x) {\n";
    if (!const_cols) return "      for (long long c = kiln_lane; c < cols; c += 32) {\n";
    const int64_t slots = (*const_cols + 31) / 32;
    // A pass that reads only stashed values has no use for its column.
    std::string s = fmt::format("      #pragma unroll\n      for (int kiln_slot = 0; kiln_slot < {}; ++kiln_slot) {{\n"
                                "        {}const long long c = kiln_lane + 32LL * kiln_slot;\n", slots,
                                stash_types.empty() ? "" : "[[maybe_unused]] ");
    if (*const_cols % 32 != 0) s += fmt::format("        if (c >= {}) break;\n", *const_cols);
    return s;
  }
  // The thread that writes a row's one value.
  const char* writer() const { return warp ? "kiln_lane == 0" : "threadIdx.x == 0"; }

  // Stashed loads (CudaRowStash): warp rows of a constant width only, where a lane's columns are slots.
  CudaRowStash stash;
  std::vector<std::string> stash_types;  // of kiln_stash<n>

  CudaRowBody body(const std::string& row_indent, const std::string& elem_indent, int pass = -1) const {
    CudaRowBody b(print, subs, col_var, flat, "(o * cols + c)", row_indent, elem_indent);
    if (pass >= 0 && !stash_types.empty()) b.use_stash(&stash, pass);
    return b;
  }

  // The passes over a row's columns: one per reduction, then the elements output's.
  int column_passes() const {
    return static_cast<int>(k.reductions.size()) + (k.output_kind == loops::RowOutput::elements ? 1 : 0);
  }
  const ScalarExpr& pass_body(int pass) const {
    return pass < static_cast<int>(k.reductions.size()) ? k.reductions[size_t(pass)].body : k.output_body;
  }

  // Stashes the loads that two or more passes read, first those read by most passes, while a lane's
  // stashes hold at most kMaxStashedValues values (registers: more would spill).
  void plan_stash() {
    if (!warp || !const_cols || *const_cols <= 0) return;
    static constexpr int64_t kMaxStashedValues = 96;
    const int64_t slots = (*const_cols + 31) / 32;
    std::map<std::string, std::pair<int, int>> uses;  // load -> (passes reading it, the first of them)
    std::map<std::string, std::string> types;
    for (int p = 0; p < column_passes(); ++p) {
      CudaRowBody b = body("", "");
      b.value(pass_body(p));
      for (const auto& [load, type] : b.element_loads()) {
        auto it = uses.emplace(load, std::pair<int, int>{0, p}).first;
        ++it->second.first;
        types.emplace(load, type);
      }
    }
    std::vector<std::pair<std::string, std::pair<int, int>>> shared;
    for (const auto& u : uses)
      if (u.second.first >= 2) shared.push_back(u);
    std::stable_sort(shared.begin(), shared.end(), [](const auto& a, const auto& b) {
      return a.second.first != b.second.first ? a.second.first > b.second.first : a.second.second < b.second.second;
    });
    for (const auto& [load, use] : shared) {
      if (int64_t(stash_types.size() + 1) * slots > kMaxStashedValues) break;
      stash.index.emplace(load, int(stash_types.size()));
      stash.first_pass.emplace(load, use.second);
      stash_types.push_back(types.at(load));
    }
  }
  // The stash arrays of one row (indent 4).
  std::string stash_declarations() const {
    std::string s;
    for (size_t n = 0; n < stash_types.size(); ++n)
      s += fmt::format("    {} kiln_stash{}[{}];  // loads the row's passes share\n", stash_types[n], n,
                       (*const_cols + 31) / 32);
    return s;
  }

  // r<r> = the reduction over row o's columns, in every thread.
  std::string reduction(size_t r) const {
    const loops::RowReduction& red = k.reductions[r];
    const DType t = red.body.dtype();
    CudaRowBody e = body("      ", "        ", static_cast<int>(r));
    const std::string v = e.value(red.body);
    std::string s = fmt::format("    // r{} = {} over the row\n    {} r{};\n    {{\n", r,
                                loops::row_reduce_name(red.kind), cuda_type(t), r);
    s += e.row_lines();
    s += fmt::format("      {} acc = {};\n", cuda_type(t), identity(red.kind, t));
    s += column_loop() + e.elem_lines();
    s += fmt::format("        acc = {}::apply(acc, {});\n      }}\n", combine_op(red.kind), v);
    if (warp)
      return s + fmt::format("      r{} = kiln_warp_reduce<{}>(acc);\n    }}\n", r, combine_op(red.kind));
    s += fmt::format("      r{} = kiln_block_reduce<{}>(acc, kiln_partial_{});\n    }}\n", r, combine_op(red.kind),
                     dtype_name(t));
    return s;
  }

  std::string elements_output() const {
    CudaRowBody e = body("      ", "        ", static_cast<int>(k.reductions.size()));
    const std::string v = e.value(k.output_body);
    std::string s = "    // the output's columns of row o\n    {\n" + e.row_lines();
    s += column_loop() + e.elem_lines();
    return s + fmt::format("        out[o * cols + c] = {};\n      }}\n    }}\n", cuda_store(k.output.dtype, v));
  }

  std::string rows_output() const {
    if (k.gather_column) return gather_output();
    CudaRowBody e = body("      ", "      ");
    const std::string v = e.value(k.output_body);
    std::string s = fmt::format("    // row o's value, by one thread\n    if ({}) {{\n", writer()) + e.row_lines();
    return s + fmt::format("      out[o] = {};\n    }}\n", cuda_store(k.output.dtype, v));
  }

  // Thread 0 evaluates the element-level body at the row's column t only; a t outside [-cols, cols)
  // reads nothing and writes NaN.
  std::string gather_output() const {
    // The column in a block of its own, with the column variable at 0 and no flat-index shortcut (for a
    // width of 1 the index's load would otherwise look like an element-level one), as on the CPU.
    loops::ExprMap<Expr> row_subs = subs;
    for (const Expr& v : loops::index_vars(k))
      if (loops::depends_on(subs.at(v), col_var)) row_subs[v] = Expr(0);
    CudaRowBody te(print, row_subs, col_var, Expr::var("kiln_no_flat", Expr(2)), "", "        ", "        ");
    const std::string tv = te.value(*k.gather_column);
    CudaRowBody e = body("      ", "        ");
    const std::string v = e.value(k.output_body);
    std::string s = fmt::format("    // row o's value at its gathered column, by one thread\n    if ({}) {{\n", writer());
    s += "      long long t = 0;\n      {\n" + te.row_lines() + te.elem_lines();
    s += fmt::format("        t = (long long){};\n      }}\n", tv);
    s += e.row_lines();
    s += "      const long long c = t < 0 ? t + cols : t;\n";
    s += fmt::format("      if (c < 0 || c >= cols) {{  // out of range: no read\n        out[o] = {};\n      }} else {{\n",
                     cuda_store(k.output.dtype, cuda_literal(NAN, k.output.dtype)));
    return s + e.elem_lines() + fmt::format("        out[o] = {};\n      }}\n    }}\n", cuda_store(k.output.dtype, v));
  }
};

}  // namespace

CudaRowSource emit_row_cuda(const RowKernel& k, const CudaRowEmitOptions& options) {
  loops::validate(k);
  const int threads = options.threads_per_block;
  KILN_INTERNAL_CHECK(threads >= 32 && threads <= 1024 && threads % 32 == 0,
                      "CUDA row emitter: bad options ({} threads per block)", threads);
  KILN_INTERNAL_CHECK(k.name.rfind("kiln_", 0) != 0, "kernel name '{}' would clash with the helpers", k.name);

  const Expr cols_extent = product(loops::col_sizes(k));
  const std::optional<int64_t> const_cols =
      cols_extent.is_const() ? std::optional<int64_t>(cols_extent.value()) : std::nullopt;
  const bool warp = options.mapping == CudaRowMapping::warp ||
                    (options.mapping == CudaRowMapping::automatic && const_cols && *const_cols <= kWarpRowMaxCols);

  CudaRowSource result;
  result.name = k.name;
  result.launch = {threads, warp ? threads / 32 : 1};
  const std::vector<Expr> syms = loops::kernel_symbols(k);
  std::map<std::string, size_t> sym_slot;
  for (const Expr& s : syms) {
    sym_slot.emplace(s.name(), result.symbols.size());
    result.symbols.push_back(s.name());
  }
  // Symbols print as s<slot> (their names need not be C identifiers), variables by their names (o, c:
  // validate keeps symbols off those).
  Emission em{k, {}, {}, {}, {}, warp, const_cols};
  em.print.leaf_name = [&sym_slot](const Expr& e) {
    return e.is_sym() ? fmt::format("s{}", sym_slot.at(e.name())) : e.name();
  };

  const std::vector<Expr> rows = loops::row_sizes(k), cols = loops::col_sizes(k);
  const Expr rows_extent = product(rows);
  const bool elements = k.output_kind == loops::RowOutput::elements;

  std::string code = fmt::format("// Row kernel '{}', generated by kiln: rows of {} x {} columns; ", k.name,
                                 loops::to_string(rows_extent), loops::to_string(cols_extent));
  for (size_t r = 0; r < k.reductions.size(); ++r)
    code += fmt::format("r{} = {} ({}), ", r, loops::row_reduce_name(k.reductions[r].kind),
                        dtype_name(k.reductions[r].body.dtype()));
  code += elements ? "an output per element" : "an output per row";
  code += warp ? "; a warp per row\n" : "; a block per row\n";
  std::string params;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    code += fmt::format("// in{}: {}\n", i, describe(k.inputs[i]));
    params += fmt::format("const {}* __restrict__ in{}, ", cuda_storage_type(k.inputs[i].dtype), i);
  }
  code += fmt::format("// out: {}\n", describe(k.output));
  params += fmt::format("{}* __restrict__ out", cuda_storage_type(k.output.dtype));
  for (size_t j = 0; j < syms.size(); ++j) {
    code += fmt::format("// s{} = {}\n", j, syms[j].name());
    params += fmt::format(", long long s{}", j);
  }
  params += ", long long rows, long long cols";
  code += cuda_scalar_preamble();
  code += cuda_row_preamble();
  code += fmt::format("\nextern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n", threads, k.name, params);
  code += "  kiln_grid_prologue();\n";

  const bool no_work = std::any_of(rows.begin(), rows.end(), [](const Expr& d) { return d.is_const(0); }) ||
                       (elements && cols_extent.is_const(0));
  if (no_work) {  // a constant zero size: nothing to do (and delinearising by it would divide by zero)
    code += "  // no work\n}\n";
    result.code = std::move(code);
    return result;
  }

  const Expr o = Expr::var("o", rows_extent);
  em.col_var = Expr::var("c", cols_extent);
  const std::vector<Expr> vars = loops::index_vars(k);
  const std::vector<Expr> row_idx = loops::delinearize(o, rows);
  const std::vector<Expr> col_idx = cols_extent.is_const(0) ? std::vector<Expr>(cols.size(), Expr(0))
                                                            : loops::delinearize(em.col_var, cols);
  for (size_t d = 0; d < vars.size(); ++d)
    em.subs.emplace(vars[d], d < rows.size() ? row_idx[d] : col_idx[d - rows.size()]);
  em.flat = loops::linear_index(vars, loops::row_major_strides(k.domain));
  if (options.stash_loads) em.plan_stash();

  // One array of per-warp partials per accumulator dtype (a block has at most 32 warps).
  std::set<DType> accumulators;
  for (const loops::RowReduction& r : k.reductions) accumulators.insert(r.body.dtype());
  if (!warp)
    for (DType t : accumulators)
      code += fmt::format("  __shared__ {} kiln_partial_{}[32];\n", cuda_type(t), dtype_name(t));
  if (elements) code += "  if (cols <= 0) return;  // no elements\n";
  if (warp) {
    // The loop's bounds are the same in every lane of a warp, so each warp reduction is reached by all.
    code += "  const int kiln_lane = threadIdx.x % 32;\n  const long long kiln_warps = blockDim.x / 32;\n";
    code += "  for (long long o = blockIdx.x * kiln_warps + threadIdx.x / 32; o < rows; o += gridDim.x * kiln_warps) {\n";
  } else {
    // The loop's bounds are the same in every thread of a block, so each block reduction is reached by all.
    code += "  for (long long o = blockIdx.x; o < rows; o += gridDim.x) {\n";
  }
  code += em.stash_declarations();
  for (size_t r = 0; r < k.reductions.size(); ++r) code += em.reduction(r);
  code += elements ? em.elements_output() : em.rows_output();
  code += "  }\n}\n";
  result.code = std::move(code);
  return result;
}

}  // namespace kiln::codegen::cuda
