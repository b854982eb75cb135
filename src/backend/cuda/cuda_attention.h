// Attention groups (schedule/fuse_attention.h) on the device: one kernel per group (cuda_attention.cpp).
#pragma once
#include <cstddef>
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
  int mma_warps = 4;         // the mma.sync kernel: warps a block (1, 2 or 4), 16 query rows each
  int wgmma_consumers = 2;   // the wgmma kernel: consumer warpgroups a block (1 or 2), 64 query rows each
  bool wgmma_overlap = true;  // ... its softmax of one tile beside the next tile's Q K^T
  bool positive_scale = false;  // the scale is > 0: unmasked scores may stay unscaled until the exponent
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

// The Hopper kernel (cuda_attention_wgmma_source.cpp, sm_90a): bf16 and f16 at head dims 64 and 128, Q,
// K and V read through 4-D TMA tensor maps (head dim, sequence, head, batch) given first, then the mask,
// the output, heads, sq, sk, the mask's and the output's strides and the scale; a block of
// 128 (wgmma_consumers + 1) threads with attention_wgmma_shared_bytes of dynamic shared memory takes
// 64 wgmma_consumers query rows of one (batch, head): grid (batch x heads, row blocks).
bool attention_uses_wgmma(const AttentionSpec& spec);
std::string attention_wgmma_source(const std::string& name, const AttentionSpec& spec);
size_t attention_wgmma_shared_bytes(const AttentionSpec& spec);
// Consumers a block for batch x heads (batch, head) pairs of sq query rows (0: not static): one where
// blocks of 64 rows take less time in waves of the GPU's SMs, counting a block of two consumers (which
// share their K and V tiles) as 1.3 times one's, else two.
int attention_wgmma_consumers(int64_t batch_heads, int64_t sq, int sm_count);
int attention_wgmma_keys_a_tile(const AttentionSpec& spec);  // KT: the K and V tiles' rows
// Launches of the Hopper kernel in this process (tests check that it ran).
uint64_t attention_wgmma_launches();

// Whether a group of `dtype` and `head_dim` becomes one kernel under options.cuda_attention: "on"
// always, "auto" where the tensor-core kernel takes it, "off" never.
bool attention_fused(const Options& options, DType dtype, int64_t head_dim);

// The group's kernel; null where attention_fused says no or for a dtype it does not take (the nodes
// then stay with the other passes). options.cuda_attention_kernel picks the tensor-core kernel
// (auto: the Hopper one where it runs and reads the operands); options.cuda_attention_warps and
// cuda_attention_consumers, when not 0, set the mma.sync kernel's warps and the Hopper kernel's consumer
// warpgroups a block.
std::unique_ptr<Kernel> make_attention_kernel(const CudaRuntime& runtime, const Graph& g,
                                              const schedule::AttentionGroup& group, const Options& options,
                                              ModuleCache& modules);

}  // namespace kiln::backend::cuda
