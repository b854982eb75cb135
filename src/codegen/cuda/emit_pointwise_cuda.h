// CUDA C++ source for a pointwise kernel (loops::PointwiseKernel), compiled with NVRTC by the CUDA backend.
//
// The source defines one entry point, named after the kernel:
//     extern "C" __global__ void <name>(const T0* in0, ..., const Tk-1* in{k-1}, Tout* out,
//                                      long long s0, ..., long long s{m-1}, long long n);
// one device pointer per kernel input (all of them, in kernel input order, used or not), the output's,
// then the runtime value of each size symbol in CudaSource::symbols order, then n, the number of output
// elements (the product of the output's sizes at those values). Elements are dense and row-major; bool
// is one byte per element (read as != 0, written as 0 or 1). Every argument is passed by value
// (cuLaunchKernel's parameter array: a CUdeviceptr per pointer, an int64 per size), so a launch needs no
// device-side argument block.
//
// Each thread walks the flat output index i in a grid-stride loop (i = block * threads + thread, then
// i += grid * threads, 64-bit), recovers the loop variables from i by division (as the CPU emitter's
// delinearisation does) where a load needs them, and reads each input at its index expression; a load
// at the output's own flat index reads at i. Any grid covers any n; CudaLaunchRule says which grid to use.
// The text depends only on the kernel and the options (same kernel, same bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loops/pointwise.h"

namespace kiln::codegen::cuda {

struct CudaEmitOptions {
  int threads_per_block = 256;  // a multiple of 32, at most 1024; also the kernel's __launch_bounds__
  int elements_per_thread = 4;  // the grid is sized so that each thread handles about this many
};

// The grid for n elements: blocks(n) blocks of threads_per_block threads (the block size must be this
// one: the kernel is compiled with __launch_bounds__(threads_per_block)).
struct CudaLaunchRule {
  int threads_per_block = 256;
  int elements_per_thread = 4;
  static constexpr int64_t kMaxBlocks = 2147483647;  // the grid's x limit; the grid-stride loop does the rest

  // ceil(n / (threads_per_block * elements_per_thread)), at most kMaxBlocks; 0 when n == 0 (launch
  // nothing: the kernel would do nothing). A negative n is an InternalError.
  int64_t blocks(int64_t n) const;
};

struct CudaSource {
  std::string name;                  // the extern "C" entry point (the kernel's name)
  std::string code;                  // the whole translation unit: preamble and kernel
  std::vector<std::string> symbols;  // size symbol names, in parameter order (s0, s1, ...)
  CudaLaunchRule launch;
};

// An unsupported dtype or op, a malformed kernel or bad options are InternalErrors: the fusion passes
// hand the emitter only kernels that the scalar IR validated.
CudaSource emit_pointwise_cuda(const loops::PointwiseKernel& kernel, const CudaEmitOptions& options = {});

}  // namespace kiln::codegen::cuda
