// Attention groups (schedule/fuse_attention.h) on the device: one kernel per group (cuda_attention.cpp).
#pragma once
#include <memory>
#include <string>

#include "backend/kernel.h"
#include "kiln/graph.h"
#include "kiln/options.h"
#include "schedule/fuse_attention.h"

namespace kiln::backend::cuda {

class CudaRuntime;
class ModuleCache;

// What one compiled attention kernel is for.
struct AttentionSpec {
  DType dtype = DType::f32;  // of Q, K, V, the mask and the output: f32, bf16 or f16
  int64_t head_dim = 64;     // D, 1 to 128
  bool mask = false;         // an additive mask is read (input 3)
  bool guard = false;        // NaN rows give zeros
  int mma_warps = 4;         // the tensor-core kernel: warps a block (1, 2 or 4), 16 query rows each
};

// Its launch: a block of kAttentionThreads per (batch, head) and kAttentionRowsPerBlock query rows
// (for the tensor-core kernel 32 * mma_warps threads and 16 * mma_warps rows).
inline constexpr int kAttentionThreads = 128;
inline constexpr int kAttentionRowsPerBlock = 8;
inline constexpr int kAttentionMmaRowsPerWarp = 16;

// The tensor-core kernel's warps a block for Sq query rows a (batch, head) (0 when not static): 4,
// fewer only where the rows would leave warps idle. Four beat one and two at every size measured on
// the H200, bert's 12 x 128 rows in 24 blocks among them (docs/PERFORMANCE.md, session 11): a block's
// warps share its key tiles, and the few blocks still start at once.
int attention_mma_warps(int64_t sq);

// The CUDA C++ of the CUDA-core kernel (cuda_attention_source.cpp), extern "C" `name` (the NVRTC-only
// test compiles it).
std::string attention_source(const std::string& name, const AttentionSpec& spec);

// bf16 and f16 at head dims that are multiples of 16 (up to 128) take the tensor-core kernel
// (cuda_attention_mma_source.cpp: the same parameters, and a last `int vec`: every operand's head-dim
// stride is 1 and its other strides and address are multiples of 16 bytes).
bool attention_uses_tensor_cores(const AttentionSpec& spec);
std::string attention_mma_source(const std::string& name, const AttentionSpec& spec);

// Whether a group of `dtype` and `head_dim` becomes one kernel under options.cuda_attention: "on"
// always, "auto" where the tensor-core kernel takes it, "off" never.
bool attention_fused(const Options& options, DType dtype, int64_t head_dim);

// The group's kernel; null where attention_fused says no or for a dtype it does not take (the nodes
// then stay with the other passes). options.cuda_attention_warps, when not 0, sets the tensor-core
// kernel's warps a block.
std::unique_ptr<Kernel> make_attention_kernel(const CudaRuntime& runtime, const Graph& g,
                                              const schedule::AttentionGroup& group, const Options& options,
                                              ModuleCache& modules);

}  // namespace kiln::backend::cuda
