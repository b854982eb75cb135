// Host-side pieces the Hopper kernels share (the wgmma GEMM template, the wgmma attention kernel): driver
// entry points not every kiln kernel needs, dynamic shared memory past 48 KB, and TMA tensor maps.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_objects.h"
#include "kiln/graph.h"

namespace kiln::backend::cuda {

// A driver entry point resolved through cuGetProcAddress; a missing one is a UserError naming it (an old
// driver).
void* driver_entry(const char* name);

// The most dynamic shared memory the context's device gives a block once opted into.
int max_shared_optin(const Context& context);

// Lets `function` take `bytes` of dynamic shared memory (a no-op up to the default 48 KB).
void allow_dynamic_shared(const Context& context, const Function& function, size_t bytes);

// One dimension of a tensor map, innermost first: its size, the byte stride of the next index (ignored
// for the innermost, which is contiguous) and the box's extent along it.
struct TensorMapDim {
  int64_t size = 1;
  int64_t byte_stride = 0;
  uint32_t box = 1;
};

// A bf16/f16 tensor's map for TMA box copies into shared memory under the 128-byte swizzle, zeros past
// its bounds (rank 1 to 5). Bounds the encoder refuses are an InternalError (callers check
// tensor_map_takes first).
CUtensorMap half_tensor_map(DType dtype, CUdeviceptr data, const std::vector<TensorMapDim>& dims);

// Whether the TMA reads such a tensor: a 16-byte aligned address, byte strides multiples of 16 below
// 2^40, sizes from 1 to 2^31.
bool tensor_map_takes(CUdeviceptr data, const std::vector<TensorMapDim>& dims);

}  // namespace kiln::backend::cuda
