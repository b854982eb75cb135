// The tensor-core GEMM template's CUDA C++ (cuda_gemm_template_source.cpp): C[M,N] = epilogue(A B) in
// bf16 or f16 with fp32 accumulation, for one tile configuration. Host-only (no driver types), so the
// NVRTC-only test compiles every variant without a GPU; cuda_gemm_template.h compiles and launches it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::backend::cuda {

enum class GemmActivation { none, gelu, relu };  // GELU is the erf form, computed in fp32

// Applied to each fp32 accumulator in this order: + bias[col] (an fp32 [N] vector), the activation,
// + residual[row, col] (an [M,N] tensor of the output dtype, row stride ldr), then one rounding to the
// output dtype. ReLU keeps NaN (ONNX Relu(NaN) is NaN).
//
// row_norm (the wgmma kernel without split-K only): A's rows are standardised first, as a LayerNorm
// folded into the product that reads it: the accumulator becomes rstd_r (acc - mean_r colsum[col]), the
// statistics of row r of A (population variance, + eps) gathered by the consumers from the A tiles as
// they pass (sums shifted by the row's first element, so E[d^2] - E[d]^2 does not cancel for rows far
// from zero), colsum[col] = sum_k B[col, k].
// The caller folds LayerNorm's gamma into B and its beta into the bias. Optionally the kernel also
// writes y = (x - mean) rstd gamma + beta, the LayerNorm's own output for its other readers, each block
// a slice of the columns of its rows. The fold subtracts mean colsum after an fp32 product of the
// un-centred rows: its error grows with |mean| / std of a row (docs/ARCHITECTURE.md).
struct GemmTemplateEpilogue {
  bool bias = false;
  GemmActivation activation = GemmActivation::none;
  bool residual = false;
  bool row_norm = false;
};

// The two kernels: mma_sync, the Ampere-style multistage kernel that runs on every GPU from sm_80;
// wgmma, Hopper's (sm_90a only): the tensor memory accelerator (TMA) fills a ring of shared-memory
// stages on mbarriers, one producer warpgroup feeds one or two consumer warpgroups that multiply by
// warpgroup MMA (wgmma) (cuda_gemm_wgmma_source.cpp).
enum class GemmFamily { mma_sync, wgmma };

// A block computes a BM x BN tile of C over K in steps of BK; warps_m x warps_n warps split the tile
// (each a (BM / warps_m) x (BN / warps_n) sub-tile of m16n8k16 products). `stages` K steps are in
// flight through cp.async. split_k > 1 gives each of split_k blocks along grid z a contiguous range of
// K; they write fp32 partials to a [split_k, M, N] workspace that a second kernel sums in split order
// (deterministic) before the epilogue. group_m: tiles are visited GROUP_M tile rows at a time, so that
// neighbouring blocks share their A and B tiles in L2.
// wgmma: BM is 64 or 128 (one consumer warpgroup per 64 rows), BN a multiple of 16 up to 256, BK 64 (one
// 128-byte swizzled row a tile row); warps_m / warps_n are unused (0). persistent: one block per SM that
// walks the tiles (their count from each call's sizes), its producer loading the next tile's stages while
// the consumers store the last; otherwise a block per tile (and split).
// cluster_reduce (wgmma, not persistent, split_k 2..8): the split_k blocks of a tile are one thread-block
// cluster; each leaves its fp32 partials in its own shared memory and the cluster sums them through
// distributed shared memory in split order (the reduce kernel's sum), each block taking every split_k-th
// 8-column group through the epilogue to C: no workspace, no second kernel. For M = 128 products, where
// a tile's K split over the cluster is what fills the SMs.
struct GemmTemplateConfig {
  int bm = 128, bn = 128, bk = 32;
  int warps_m = 2, warps_n = 4;
  int stages = 3;
  int split_k = 1;
  int group_m = 8;
  GemmFamily family = GemmFamily::mma_sync;
  bool persistent = false;
  bool cluster_reduce = false;

  int threads() const { return family == GemmFamily::wgmma ? 128 * (1 + bm / 64) : 32 * warps_m * warps_n; }
  bool operator==(const GemmTemplateConfig&) const = default;
};

struct GemmTemplateSpec {
  DType dtype = DType::bf16;  // of A, B, the residual and C: bf16 or f16
  bool trans_b = false;       // B is [K,N] row-major, or [N,K] (Linear's weight, Gemm transB=1)
  GemmTemplateEpilogue epilogue;
  GemmTemplateConfig config;
};

// "128x128x32_w2x4_s3_g8" (+ "_k4" with split-K); wgmma: "wg128x256x64_s4_g8" (+ "_p" persistent, "_k4",
// "_kc4" split-K in a cluster),
// for kernel names, sweeps and the tuning store.
std::string gemm_config_name(const GemmTemplateConfig& c);
// "bare", "bias", "bias_gelu", "bias_relu_residual", ...
std::string gemm_epilogue_name(const GemmTemplateEpilogue& e);

// An InternalError naming what is wrong: tiles not made of whole warp tiles (each warp's tile a multiple
// of 16 x 16), BK not a multiple of 16, stages outside 2..4, split_k outside 1..16, group_m < 1, a dtype
// other than bf16 / f16; for wgmma, a tile it cannot take, BK other than 64, stages outside 2..8, or B as
// [K,N] (its wgmma form reads B K-major only); cluster_reduce other than on a non-persistent wgmma kernel
// with split_k 2..8.
void check_gemm_spec(const GemmTemplateSpec& spec);

// Dynamic shared memory a block of this spec needs (mma_sync: every stage's A and B tiles, rows padded by
// 16 bytes; wgmma: every stage's swizzled tiles, 1 KB of alignment slack and the stages' mbarriers).
size_t gemm_template_shared_bytes(const GemmTemplateSpec& spec);

// The translation unit: extern "C" `name` (the product; with split_k > 1 it writes the partials) and,
// with split_k > 1, `name`_reduce. Parameters of `name`:
//   (const u16* a, const u16* b, u16* c, const float* bias, const u16* residual, float* workspace,
//    long long m, long long n, long long k, long long lda, long long ldb, long long ldc, long long ldr,
//    long long k_split, int a_vec, int b_vec)
// grid (tiles_m * tiles_n, 1, split_k), block threads(), gemm_template_shared_bytes of dynamic shared
// memory. k_split: the K range of one split, a multiple of BK. a_vec / b_vec: that operand's address is
// a multiple of 16 bytes and its row stride of 8 elements, so tiles move as 16-byte cp.async copies
// (zero-filled past the matrix); otherwise element loads (any alignment, any stride).
// wgmma's `name` takes the operands as two TMA descriptors (CUtensorMap, 128 bytes each, passed by value;
// cuda_gemm_template.cpp encodes them: bf16/f16 2-D, inner dimension K, box BK x BM for A and BK x BN for
// B, 128-byte swizzle, out-of-bounds elements zero):
//   (KilnTensorMap a, KilnTensorMap b, u16* c, const float* bias, const u16* residual, float* workspace,
//    long long m, long long n, long long k, long long ldc, long long ldr, long long k_split)
// any grid (persistent: at most one block an SM; otherwise tiles_m * tiles_n * split_k), threads() a block.
// cluster_reduce: the kernel carries __cluster_dims__(split_k, 1, 1) (its grid, tiles * split_k, is whole
// clusters) and writes C itself; `name`_reduce is not used.
// `name`_reduce: (const float* workspace, u16* c, const float* bias, const u16* residual, long long m,
//   long long n, long long ldc, long long ldr), kGemmReduceThreads threads a block, any grid.
std::string gemm_template_source(const std::string& name, const GemmTemplateSpec& spec);
inline constexpr int kGemmReduceThreads = 256;

// The configs the autotuner times: large tiles for large products, smaller ones and split-K for the
// small M x N with large K of a transformer at small batch.
std::vector<GemmTemplateConfig> default_gemm_template_configs();

// The wgmma configs the autotuner times on Hopper (sm_90a), for B as [N,K]: 128 x 256 and 128 x 128 tiles
// (persistent or not) for large products, 64-row tiles and split-K for M = 128.
std::vector<GemmTemplateConfig> hopper_gemm_template_configs();

// A config of default_gemm_template_configs() (both in cuda_gemm_template_configs.cpp) for (m, n, k) on
// a device of sm_count SMs, by tile count: the largest tile that still gives a block per SM, split-K
// where even the smallest tile leaves most SMs idle and K is long.
GemmTemplateConfig choose_gemm_template_config(int64_t m, int64_t n, int64_t k, int sm_count);

}  // namespace kiln::backend::cuda
