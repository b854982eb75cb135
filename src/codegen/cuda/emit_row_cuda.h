// CUDA C++ source for a row kernel (loops::RowKernel), the GPU twin of codegen/cpu/emit_row.h, compiled
// with NVRTC by the CUDA backend.
//
// The source defines one entry point, named after the kernel:
//     extern "C" __global__ void __launch_bounds__(T) <name>(const T0* in0, ..., const Tk-1* in{k-1}, Tout* out,
//                                                            long long s0, ..., long long s{m-1},
//                                                            long long rows, long long cols);
// one device pointer per kernel input (all of them, in kernel input order, used or not), the output's,
// the run-time value of each size symbol in CudaRowSource::symbols order (loops::kernel_symbols), then
// rows (the product of the row dims) and cols (the product of the reduced dims) at those values. Elements
// are dense and row-major; bool is one byte per element (read as != 0, written as 0 or 1). Every argument
// is passed by value (cuLaunchKernel's parameter array: a CUdeviceptr per pointer, an int64 per size).
// The block must have exactly CudaRowLaunch::threads_per_block threads (T, the __launch_bounds__), the
// grid CudaRowLaunch::blocks(rows, cols) blocks (any grid of at least one block gives the same result).
//
// Strategy, by CudaRowMapping:
// - block: one block per row, in a grid-stride loop over rows (row o = blockIdx.x, then += gridDim.x;
//   64-bit), so that a wide row is reduced by all of the block's threads. Per row, each reduction is one
//   pass: every thread folds the columns c = threadIdx.x, c += blockDim.x into one accumulator of the
//   reduction's dtype, then the block combines those (a butterfly of __shfl_xor_sync inside each warp,
//   then the warps' values from shared memory, in warp order, by every thread), so every thread holds
//   the same row result.
// - warp: one warp per row (row o = blockIdx.x * T/32 + warp, then += gridDim.x * T/32): the same passes
//   with the 32 lanes folding c = lane, c += 32 and a butterfly only, no shared memory and no barrier.
//   For a narrow row a block's reduction is mostly waiting; a warp's costs five shuffles. With a
//   constant width the column loop is fully unrolled (ceil(width / 32) slots per lane), so a lane's
//   loads are all in flight at once.
// The output pass then writes the row's columns (elements output) or thread (lane) 0 writes the row's
// value (rows output; with a gather column, it evaluates the body at that one column). A warp row of a
// constant width keeps the loads that several passes read in registers (stash_loads); otherwise inputs
// are re-read in each pass (from L1 / L2 after the first). Results depend on T and the mapping (the order
// of additions), never on the grid.
//
// Semantics are the CPU emitter's: sums accumulate in the reduction's dtype; max and min propagate NaN
// (kiln_max_nan / kiln_min_nan, never fmaxf / fminf); an empty row reduces to the identity (sum 0,
// max -inf, min +inf); a gather column t outside [-cols, cols) writes NaN; no rows, or an elements
// output with no columns, writes nothing. Scalar operations are scalar_cuda.h's (IEEE math, no FMA
// contraction, no fast-math intrinsics). The text depends only on the kernel and the options.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loops/row_kernel.h"

namespace kiln::codegen::cuda {

// Which threads reduce a row (see the strategy above).
enum class CudaRowMapping {
  automatic,  // warp for rows of a constant width of at most kWarpRowMaxCols columns, else block
  block,
  warp,  // at any width (a symbolic one loops 32 columns at a time)
};
// The widest constant row that `automatic` gives one warp: 32 slots a lane. Wider rows have enough
// columns to keep a block's warps busy.
inline constexpr int64_t kWarpRowMaxCols = 1024;

struct CudaRowEmitOptions {
  int threads_per_block = 256;  // a multiple of 32, at most 1024; also the kernel's __launch_bounds__
  CudaRowMapping mapping = CudaRowMapping::automatic;
  // Warp rows of a constant width: the loads several passes read are kept in registers by the first
  // (CudaRowStash), so each element is read from memory once (Options::cuda_row_stash).
  bool stash_loads = true;
};

struct CudaRowLaunch {
  int threads_per_block = 256;
  int rows_per_block = 1;  // threads_per_block / 32 for one warp per row
  static constexpr int64_t kMaxBlocks = 2147483647;  // the grid's x limit; the kernel loops over further rows

  // ceil(rows / rows_per_block) blocks, at most kMaxBlocks; 0 when rows == 0 (launch nothing). cols does
  // not change the grid (it is checked to be >= 0); negative sizes are an InternalError.
  int64_t blocks(int64_t rows, int64_t cols) const;
  // The threads that reduce one row: their count fixes the order of a row's additions.
  int threads_per_row() const { return rows_per_block == 1 ? threads_per_block : 32; }
};

struct CudaRowSource {
  std::string name;                  // the extern "C" entry point (the kernel's name)
  std::string code;                  // the whole translation unit: preambles and kernel
  std::vector<std::string> symbols;  // size symbol names, in parameter order (s0, s1, ...)
  CudaRowLaunch launch;
};

// The block-reduction helpers of row kernels (kiln_block_reduce and its combine operations), guarded
// like cuda_scalar_preamble() so that several kernels can share one program. Needs that preamble first.
std::string_view cuda_row_preamble();

// A malformed kernel, an unsupported dtype or op, or bad options are InternalErrors.
CudaRowSource emit_row_cuda(const loops::RowKernel& kernel, const CudaRowEmitOptions& options = {});

}  // namespace kiln::codegen::cuda
