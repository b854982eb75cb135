// Row kernels of the loop-level IR: reductions along the trailing axes fused with the pointwise work
// around them (softmax, LayerNorm, a mean), one generated kernel each.
//
// The iteration domain is a full tensor shape; its first row_rank dims index rows, the others are
// collapsed into one `cols` extent (the reduced axes). Per row, the kernel evaluates its reductions
// in order (sum, max or min of a ScalarExpr over the row's elements; a body may read the results of
// earlier reductions of the same row), then writes its output: one value per element of the domain
// (RowOutput::elements, e.g. softmax) or one per row (RowOutput::rows, e.g. ReduceMean).
//
// Bodies are ordinary pointwise ScalarExprs over the loop variables x0 .. x{rank-1} of the domain
// (index_vars), plus two row leaves spelled as loads from reserved input numbers (the pointwise IR
// has no other leaf kinds, and a stray leaf is caught by validate of either kernel kind):
//   row_result(k, dtype)  reduction k of this row (index 0);
//   row_length(dtype)     the number of elements a row reduces (`cols`) as a float value.
// A rows output may instead read one column per row (a gather after the reductions, e.g. LogSoftmax
// + GatherElements): with gather_column set (an integer, row-level expression t), the output body is
// an element-level expression evaluated only at column c = t (t + cols when t < 0). A t outside
// [-cols, cols) reads nothing and writes NaN for that row (eager raises a user error there; a
// kernel cannot throw). Gather kernels have exactly one reduced dim.
// Numeric semantics are the pointwise IR's; max and min reductions propagate NaN (a NaN anywhere in
// the row gives NaN), an empty row reduces to the identity (sum 0, max -inf, min +inf).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loops/pointwise.h"

namespace kiln::loops {

// Rows at least this long are split across threads by default (a router's calibration moves it for
// softmax-family kernels).
inline constexpr int64_t kRowSplitMinCols = 32768;

enum class RowReduceKind : uint8_t { Sum, Max, Min };
std::string_view row_reduce_name(RowReduceKind k);

struct RowReduction {
  RowReduceKind kind = RowReduceKind::Sum;
  ScalarExpr body = constant(0.0, DType::f32);  // its dtype is the accumulator's (f16 / bf16: accumulated in f32)
};

enum class RowOutput : uint8_t { elements, rows };

struct RowKernel {
  std::string name;  // a C identifier: the entry point's name
  std::vector<TensorDesc> inputs;
  std::vector<Expr> domain;  // sizes (constants or symbols): row dims, then the reduced dims
  int row_rank = 0;          // 0 <= row_rank <= rank; row_rank == rank reduces nothing (cols == 1)
  std::vector<RowReduction> reductions;
  RowOutput output_kind = RowOutput::elements;
  // elements: as many elements as the domain (row-major over it); rows: as many as there are rows.
  TensorDesc output;
  ScalarExpr output_body = constant(0.0, DType::f32);  // rows: must not depend on the reduced dims...
  std::optional<ScalarExpr> gather_column;              // ...unless this is set (rows output only)
};

// Input numbers from kRowLeafBase on are the row leaves, never kernel inputs.
inline constexpr int kRowLeafBase = 1 << 20;
ScalarExpr row_result(int reduction, DType dtype);
ScalarExpr row_length(DType dtype);
bool is_row_leaf(const ScalarExpr& e);
bool is_row_length(const ScalarExpr& e);
int row_result_index(const ScalarExpr& e);  // -1 for row_length and for anything else

// Loop variables x0 .. x{rank-1} over the domain, and the row / reduced parts of the domain.
std::vector<Expr> index_vars(const RowKernel& k);
std::vector<Expr> row_sizes(const RowKernel& k);
std::vector<Expr> col_sizes(const RowKernel& k);
// Input i read at the current element with numpy broadcasting against the domain.
ScalarExpr load_broadcast(const RowKernel& k, int input);

// Size symbols (domain, inputs, output, load indices) in canonical order: the order of syms[].
std::vector<Expr> kernel_symbols(const RowKernel& k);

// Checks dtypes (inputs and output f32/f64/i32/i64/bool, reductions f32/f64), that loads read valid
// inputs at indices over the domain's variables only, that reduction k reads only results j < k,
// that a rows output body uses no reduced variable, and the output's element count. InternalError
// otherwise.
void validate(const RowKernel& k);

// Readable form for tests and messages: one line per reduction and one for the output, with the
// row leaves printed as r0, r1, ... and `cols`. Shared subtrees print in full: for small kernels.
std::string to_string(const RowKernel& k);

}  // namespace kiln::loops
