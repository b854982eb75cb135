// C++ source for a pointwise kernel (loops::PointwiseKernel).
//
// The generated translation unit exports one function
//     extern "C" void <name>(const void* const* inputs, void* output, const int64_t* syms);
// inputs[i] points at input i's elements (row-major, dense), output at the output's, and syms[j] is
// the runtime value of the j-th size symbol of PointwiseSource::symbols. Loop structure: the output's
// leading dimensions are collapsed into one outer loop, parallelised with OpenMP when the kernel has
// at least parallel_threshold elements; the last dimension is the inner loop, contiguous in the
// output and marked `omp simd` (every element is independent, so that changes no result). A last
// dimension that may be longer than inner_block is split into blocks, and the parallel loop runs
// over (row, block) tiles, so that a few long rows (or a rank-1 output) still use every thread.
// Nothing is touched when the output has no elements. The text depends only on the kernel and the
// options (same kernel, same bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "loops/pointwise.h"

namespace kiln::codegen::cpu {

struct PointwiseEmitOptions {
  int64_t parallel_threshold = 32768;  // elements; smaller kernels run on the calling thread
  int64_t inner_block = 4096;          // a longer (or symbolic) last dimension is split into blocks
};

struct PointwiseSource {
  KernelSource source;               // entry_points == {kernel.name}
  std::vector<std::string> symbols;  // size symbol names in syms[] order
};

using PointwiseEntry = void(const void* const* inputs, void* output, const int64_t* syms);

PointwiseSource emit_pointwise_cpp(const loops::PointwiseKernel& kernel, const PointwiseEmitOptions& options = {});

}  // namespace kiln::codegen::cpu
