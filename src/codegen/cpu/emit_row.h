// C++ source for a row kernel (loops::RowKernel): reductions along the trailing axes fused with their
// pointwise producers and consumers.
//
// The generated translation unit exports one function with the pointwise kernels' signature
//     extern "C" void <name>(const void* const* inputs, void* output, const int64_t* syms);
// (inputs[i]: input i's elements, row-major and dense; output: the output's; syms[j]: the run-time
// value of the j-th size symbol of RowSource::symbols, i.e. loops::kernel_symbols order).
//
// Each reduction becomes a function over one row's columns [begin, end) returning its partial result,
// and the output one function writing those columns (or the row's value): both strategies call them.
//  (a) Per row: `omp parallel for` over rows (only when rows * cols >= parallel_threshold); each
//      iteration runs every reduction over the whole row, then writes it. Used when cols <
//      split_min_cols.
//  (b) Split rows: each row is cut into parts of split_part_cols columns; one parallel region runs,
//      per reduction, `omp for` over (row, part) tasks into partial results, then `omp for` over rows
//      combining the parts in order, then the output over (row, part) tasks. So a [1, 1e6] softmax
//      or a whole-tensor reduction (rows == 1) uses every thread. Used when cols >= split_min_cols.
// The choice depends on cols alone (never on the thread count), so results do not depend on the
// number of threads. With a constant cols only the applicable path is emitted; with a symbolic one
// both are, chosen at run time.
//
// Inner loops: a reduction keeps accumulator_bytes of lanes (64 floats / 32 doubles by default: four
// AVX-512 registers) updated in blocks of that many columns under `omp simd`; the last, shorter block
// updates the first lanes in a second simd loop (the compiler gives it a scalar epilogue); the lanes
// are combined in a fixed pairwise order. Rows shorter than short_row_cols use one register of
// lanes: there the combine, not the dependency chain, is what costs (measured: softmax rows of 128
// are 13% faster with 16 lanes, rows of 768 12% slower). The lane count is a template argument of
// each reduction function, picked at run time when cols is symbolic; results depend on it (the
// order of additions), never on the thread count. Sums accumulate in the reduction's own dtype (f32 for f32: the lanes and the
// pairwise combine keep the error near n / 64 + log2(64) roundings; f16 and bf16 in float, as every
// half value is computed: widened at its load, rounded to nearest even at the store). Max and min
// propagate NaN.
// No fast-math: the kernels are compiled with IEEE semantics.
//
// Softmax's exp: when the output body contains a reduction's element value (exp(x - max) inside
// exp(x - max) / sum), that reduction also stores the value into the output, and the later passes
// (later reductions, the output) read it back instead of recomputing it (LayerNorm's x = a + b of a
// fused residual Add is stored by the mean's pass). The stored value has the output's dtype, so
// results are the same. (Not for a half output: its stored values are rounded, the float computed is not.)
//
// Zero sizes: no rows, or an elements output with no columns, touches nothing; a rows output with no
// columns writes each row's identity result (sum 0, mean NaN, max -inf). The text depends only on
// the kernel and the options.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "loops/row_kernel.h"

namespace kiln::codegen::cpu {

struct RowEmitOptions {
  int64_t parallel_threshold = 32768;  // elements; smaller per-row kernels run on the calling thread
  int64_t split_min_cols = loops::kRowSplitMinCols;  // rows at least this long are split across threads
  int64_t split_part_cols = 16384;     // columns per part of a split row
  int64_t accumulator_bytes = 256;     // lanes per reduction (a power of two number of elements)...
  int64_t short_row_cols = 384;        // ...and for rows shorter than this (per-row path only)
  int64_t short_row_accumulator_bytes = 64;
};

struct RowSource {
  KernelSource source;               // entry_points == {kernel.name}
  std::vector<std::string> symbols;  // size symbol names in syms[] order
};

using RowEntry = void(const void* const* inputs, void* output, const int64_t* syms);

RowSource emit_row_cpp(const loops::RowKernel& kernel, const RowEmitOptions& options = {});

}  // namespace kiln::codegen::cpu
