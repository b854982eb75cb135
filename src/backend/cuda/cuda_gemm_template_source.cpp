// The tensor-core GEMM template's CUDA C++: a configuration's sizes and epilogue as #defines in front of
// one fixed kernel text (so the text is checked once, and a config changes only constants).
//
// The kernel is the Ampere-style multistage GEMM that runs on every GPU from sm_80 (on Hopper it is the
// baseline the wgmma / TMA template of issue 16 must beat): A and B tiles go global -> shared by 16-byte
// cp.async copies, STAGES - 1 K steps ahead of the one being multiplied; operand fragments come from
// shared memory by ldmatrix (B's transposed on the way when it is [K,N]); the products are mma.sync
// m16n8k16 with fp32 accumulators, which the epilogue takes straight from registers. Tile rows are
// padded by 8 elements (16 bytes): the 8 row addresses of one ldmatrix then fall in distinct banks.
// Conventions (helpers, 32-bit shared addresses) follow cuda_attention_mma_source.cpp.
#include "backend/cuda/cuda_gemm_template_source.h"

#include <fmt/format.h>

#include "backend/cuda/cuda_gemm_template_parts.h"
#include "codegen/cuda/scalar_cuda.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

constexpr const char* kGemmShared = R"(
KILN_DEV float kiln_word_to_f32(unsigned short w) { return KILN_WIDEN(w); }
KILN_DEV unsigned short kiln_f32_to_word(float x) { return KILN_NARROW(x); }
KILN_DEV unsigned kiln_pack(float lo, float hi) {
  return (unsigned)kiln_f32_to_word(lo) | ((unsigned)kiln_f32_to_word(hi) << 16);
}
KILN_DEV unsigned kiln_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// The epilogue of one accumulator (see GemmTemplateEpilogue): bias, activation, residual, in fp32.
KILN_DEV float kiln_epilogue(float x, const float* __restrict__ bias, const unsigned short* __restrict__ res,
                             long long row, long long col, long long ldr) {
#if EPI_BIAS
  x += bias[col];
#endif
#if EPI_ACT == 1
  x = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));  // GELU, erf form
#elif EPI_ACT == 2
  x = x < 0.0f ? 0.0f : x;  // ReLU; NaN stays NaN
#endif
#if EPI_RES
  x += kiln_word_to_f32(res[row * ldr + col]);
#endif
  return x;
}
)";

constexpr const char* kGemmReduce = R"(
#if SPLIT_K > 1 && CLUSTER_K == 0
// The splits' partials summed in split order (the same result on every run), then the epilogue.
extern "C" __global__ void __launch_bounds__(REDUCE_THREADS) KILN_GEMM_REDUCE_NAME(
    const float* __restrict__ ws, unsigned short* __restrict__ c, const float* __restrict__ bias,
    const unsigned short* __restrict__ res, long long m, long long n, long long ldc, long long ldr) {
  kiln_grid_prologue();
  const long long total = m * n;
  for (long long e = (long long)blockIdx.x * REDUCE_THREADS + threadIdx.x; e < total;
       e += (long long)gridDim.x * REDUCE_THREADS) {
    const long long row = e / n, col = e % n;
    float x = ws[e];
#pragma unroll
    for (int s = 1; s < SPLIT_K; ++s) x += ws[s * total + e];
    c[row * ldc + col] = kiln_f32_to_word(kiln_epilogue(x, bias, res, row, col, ldr));
  }
}
#endif
)";

// The mma.sync kernel, after the #defines and kGemmShared. Sizes and offsets into global memory are 64-bit;
// tile-local ones int.
constexpr const char* kGemmBody = R"(
#define WTM (BM / WARPS_M)   // a warp's tile
#define WTN (BN / WARPS_N)
#define MI (WTM / 16)        // its m16 fragments
#define NI (WTN / 8)         // its n8 fragments
#define A_PITCH (BK + 8)     // A's tile: [BM][A_PITCH]
#if TRANS_B
#define B_ROWS BN            // B's tile as it lies in memory: [BN][BK] ...
#define B_COLS BK
#else
#define B_ROWS BK            // ... or [BK][BN]
#define B_COLS BN
#endif
#define B_PITCH (B_COLS + 8)
#define A_STAGE (BM * A_PITCH)  // elements a stage
#define B_STAGE (B_ROWS * B_PITCH)

// acc += a (16x16, row-major) * b (16x8, column-major); fp32 accumulators.
KILN_DEV void kiln_mma(float* acc, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." KILN_PTX_TYPE "." KILN_PTX_TYPE ".f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Four 8x8 matrices of 16-bit words, lane i giving the address of row i % 8 of matrix i / 8; .trans
// delivers each transposed (B [K,N] has K along rows, its fragments want K along columns).
KILN_DEV void kiln_ldsm(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
KILN_DEV void kiln_ldsm_trans(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
// 16 bytes global -> shared without a register trip: the first `bytes` (0 to 16) read, the rest zeros
// (nothing is read with 0, so `src` need only be a valid address).
KILN_DEV void kiln_cp16(unsigned dst, const unsigned short* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
KILN_DEV void kiln_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
KILN_DEV void kiln_cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(kPending) : "memory"); }

// Rows [r0, r0 + ROWS) x columns [c0, c0 + COLS) of a row-major matrix (row stride ld) into a
// [ROWS][PITCH] tile; elements at rows >= rows or columns >= cols are zeros (so a partial K step adds
// nothing, and NaN past the end cannot leak in). vec: 16-byte pieces by cp.async (the caller waits
// before reading); otherwise element loads stored as one 16-byte word, visible after the next barrier.
template <int ROWS, int COLS, int PITCH>
KILN_DEV void kiln_load_tile(const unsigned short* __restrict__ src, long long ld, long long r0, long long c0,
                             long long rows, long long cols, bool vec, unsigned short* tile) {
  constexpr int kPieces = COLS / 8, kTotal = ROWS * kPieces;
  const unsigned tile_s = kiln_smem(tile);
#pragma unroll
  for (int i = 0; i < (kTotal + THREADS - 1) / THREADS; ++i) {
    const int e = threadIdx.x + i * THREADS;
    if (kTotal % THREADS != 0 && e >= kTotal) break;
    const int r = e / kPieces, c = (e % kPieces) * 8;
    const long long gr = r0 + r, gc = c0 + c;
    const long long left = gr < rows ? cols - gc : 0;  // valid elements from gc on
    const int n = left <= 0 ? 0 : left >= 8 ? 8 : (int)left;
    const unsigned short* p = n > 0 ? src + gr * ld + gc : src;
    if (vec) {
      kiln_cp16(tile_s + (unsigned)(r * PITCH + c) * 2u, p, n * 2);
    } else {
      unsigned w[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        w[j] = (2 * j < n ? (unsigned)p[2 * j] : 0u) | (2 * j + 1 < n ? (unsigned)p[2 * j + 1] << 16 : 0u);
      *(uint4*)(tile + r * PITCH + c) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS) KILN_GEMM_NAME(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b, unsigned short* __restrict__ c,
    const float* __restrict__ bias, const unsigned short* __restrict__ res, float* __restrict__ ws,
    long long m, long long n, long long k, long long lda, long long ldb, long long ldc, long long ldr,
    long long k_split, int a_vec, int b_vec) {
  kiln_grid_prologue();
  extern __shared__ __align__(128) unsigned short kiln_tiles[];
  unsigned short* a_tiles = kiln_tiles;
  unsigned short* b_tiles = kiln_tiles + STAGES * A_STAGE;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  // Grouped tile order: GROUP_M tile rows at a time, down the rows first.
  const long long tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
  const long long pid = blockIdx.x, in_group = (long long)GROUP_M * tiles_n;
  const long long first_m = pid / in_group * GROUP_M;
  const long long group_rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
  const long long m0 = (first_m + pid % in_group % group_rows) * BM, n0 = pid % in_group / group_rows * BN;
  // This block's K range (all of K without split-K).
  const long long k_begin = (long long)blockIdx.z * k_split;
  const long long k_end = k_begin + k_split < k ? k_begin + k_split : k;
  const int steps = k_end > k_begin ? (int)((k_end - k_begin + BK - 1) / BK) : 0;
  const bool av = a_vec != 0, bv = b_vec != 0;

  // Fragment addresses of this lane in stage 0. A: lanes 0-15 rows 0-15 at column 0, lanes 16-31 at 8.
  const unsigned a_lane = kiln_smem(a_tiles) + (unsigned)((wm * WTM + lane % 16) * A_PITCH + (lane / 16) * 8) * 2u;
#if TRANS_B
  // B [N,K]: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
  const unsigned b_lane = kiln_smem(b_tiles) +
                          (unsigned)((wn * WTN + (lane / 16) * 8 + lane % 8) * B_PITCH + ((lane / 8) % 2) * 8) * 2u;
#else
  // B [K,N], transposed by ldmatrix: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
  const unsigned b_lane = kiln_smem(b_tiles) +
                          (unsigned)((lane % 8 + ((lane / 8) % 2) * 8) * B_PITCH + wn * WTN + (lane / 16) * 8) * 2u;
#endif

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

  // K step `s` into stage `st`.
  auto load = [&](int s, int st) {
    const long long k0 = k_begin + (long long)s * BK;
    kiln_load_tile<BM, BK, A_PITCH>(a, lda, m0, k0, m, k_end, av, a_tiles + st * A_STAGE);
#if TRANS_B
    kiln_load_tile<BN, BK, B_PITCH>(b, ldb, n0, k0, n, k_end, bv, b_tiles + st * B_STAGE);
#else
    kiln_load_tile<BK, BN, B_PITCH>(b, ldb, k0, n0, k_end, n, bv, b_tiles + st * B_STAGE);
#endif
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) load(s, s);
    kiln_cp_commit();  // one group per step, empty past the end, so the wait count below holds
  }
  for (int s = 0; s < steps; ++s) {
    kiln_cp_wait<STAGES - 2>();  // step s is in ...
    __syncthreads();             // ... for every thread, and every warp is done with step s - 1's stage
    const int ahead = s + STAGES - 1;
    if (ahead < steps) load(ahead, ahead % STAGES);  // into the stage step s - 1 used
    kiln_cp_commit();
    const int st = s % STAGES;
    const unsigned a_st = a_lane + (unsigned)(st * A_STAGE) * 2u, b_st = b_lane + (unsigned)(st * B_STAGE) * 2u;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i) kiln_ldsm(af[i], a_st + (unsigned)(i * 16 * A_PITCH + kk * 16) * 2u);
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned f[4];
#if TRANS_B
        kiln_ldsm(f, b_st + (unsigned)(j * 8 * B_PITCH + kk * 16) * 2u);
#else
        kiln_ldsm_trans(f, b_st + (unsigned)(kk * 16 * B_PITCH + j * 8) * 2u);
#endif
        bf[j][0] = f[0];
        bf[j][1] = f[1];
        bf[j + 1][0] = f[2];
        bf[j + 1][1] = f[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) kiln_mma(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  kiln_cp_wait<0>();  // only empty groups are left; no copy outlives the block

  // Accumulator [i][j][2h + e] is row m0 + wm WTM + 16 i + g + 8 h, column n0 + wn WTN + 8 j + 2 t + e.
#if SPLIT_K == 1
  // Two adjacent columns as one 32-bit store where C's rows are even and its address 4-byte aligned.
  const bool paired = (ldc & 1) == 0 && ((unsigned long long)c & 3) == 0;
#endif
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long row = m0 + wm * WTM + i * 16 + g + h * 8;
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const long long col = n0 + wn * WTN + j * 8 + 2 * t;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
#if SPLIT_K > 1
        float* w = ws + ((long long)blockIdx.z * m + row) * n + col;
        if (col < n) w[0] = v0;
        if (col + 1 < n) w[1] = v1;
#else
        unsigned short* o = c + row * ldc + col;
        if (paired && col + 1 < n) {
          *(unsigned*)o = kiln_pack(kiln_epilogue(v0, bias, res, row, col, ldr),
                                    kiln_epilogue(v1, bias, res, row, col + 1, ldr));
        } else {
          if (col < n) o[0] = kiln_f32_to_word(kiln_epilogue(v0, bias, res, row, col, ldr));
          if (col + 1 < n) o[1] = kiln_f32_to_word(kiln_epilogue(v1, bias, res, row, col + 1, ldr));
        }
#endif
      }
    }
}

)";

}  // namespace

std::string gemm_config_name(const GemmTemplateConfig& c) {
  std::string s =
      c.family == GemmFamily::wgmma
          ? fmt::format("wg{}x{}x{}_s{}_g{}{}", c.bm, c.bn, c.bk, c.stages, c.group_m, c.persistent ? "_p" : "")
          : fmt::format("{}x{}x{}_w{}x{}_s{}_g{}", c.bm, c.bn, c.bk, c.warps_m, c.warps_n, c.stages, c.group_m);
  if (c.split_k > 1) s += fmt::format("_k{}{}", c.cluster_reduce ? "c" : "", c.split_k);
  return s;
}

std::string gemm_epilogue_name(const GemmTemplateEpilogue& e) {
  std::string s;
  if (e.bias) s += "bias";
  if (e.activation != GemmActivation::none) {
    s += s.empty() ? "" : "_";
    s += e.activation == GemmActivation::gelu ? "gelu" : "relu";
  }
  if (e.residual) s += s.empty() ? "residual" : "_residual";
  if (e.row_norm) s = "norm" + (s.empty() ? "" : "_" + s);
  return s.empty() ? "bare" : s;
}

void check_gemm_spec(const GemmTemplateSpec& spec) {
  const GemmTemplateConfig& c = spec.config;
  const std::string what = gemm_config_name(c);
  KILN_INTERNAL_CHECK(spec.dtype == DType::bf16 || spec.dtype == DType::f16, "GEMM template {}: dtype {}", what,
                      dtype_name(spec.dtype));
  KILN_INTERNAL_CHECK(c.split_k >= 1 && c.split_k <= 16, "GEMM template {}: split_k {}", what, c.split_k);
  KILN_INTERNAL_CHECK(c.group_m >= 1, "GEMM template {}: group_m {}", what, c.group_m);
  KILN_INTERNAL_CHECK(!spec.epilogue.row_norm || (c.family == GemmFamily::wgmma && c.split_k == 1),
                      "GEMM template {}: row_norm needs the wgmma kernel without split-K (whole rows of A)", what);
  if (c.family == GemmFamily::wgmma) {
    KILN_INTERNAL_CHECK(spec.trans_b, "GEMM template {}: wgmma reads B as [N,K] only", what);
    KILN_INTERNAL_CHECK((c.bm == 64 || c.bm == 128) && c.bn >= 16 && c.bn <= 256 && c.bn % 16 == 0,
                        "GEMM template {}: wgmma tiles are 64 or 128 rows by 16..256 columns", what);
    KILN_INTERNAL_CHECK(c.bk == 64, "GEMM template {}: wgmma's BK is 64 (one 128-byte swizzle row)", what);
    KILN_INTERNAL_CHECK(c.stages >= 2 && c.stages <= 8, "GEMM template {}: {} stages", what, c.stages);
    // A cluster of 8 blocks is the most every Hopper GPU schedules (portable); a persistent block walks
    // tiles alone.
    KILN_INTERNAL_CHECK(!c.cluster_reduce || (!c.persistent && c.split_k >= 2 && c.split_k <= 8),
                        "GEMM template {}: a cluster reduce needs split_k 2..8 without persistence", what);
    return;
  }
  KILN_INTERNAL_CHECK(!c.cluster_reduce, "GEMM template {}: only the wgmma kernel reduces in a cluster", what);
  KILN_INTERNAL_CHECK(!c.persistent, "GEMM template {}: only the wgmma kernel is persistent", what);
  KILN_INTERNAL_CHECK(c.warps_m >= 1 && c.warps_n >= 1 && c.threads() <= 1024, "GEMM template {}: warps", what);
  // Each warp's tile: whole m16 fragments and pairs of n8 ones (one ldmatrix.x4 gives two).
  KILN_INTERNAL_CHECK(c.bm > 0 && c.bn > 0 && c.bm % (16 * c.warps_m) == 0 && c.bn % (16 * c.warps_n) == 0,
                      "GEMM template {}: the tile is not whole 16x16 warp fragments", what);
  KILN_INTERNAL_CHECK(c.bk >= 16 && c.bk % 16 == 0, "GEMM template {}: BK", what);
  KILN_INTERNAL_CHECK(c.stages >= 2 && c.stages <= 4, "GEMM template {}: {} stages", what, c.stages);
}

size_t gemm_template_shared_bytes(const GemmTemplateSpec& spec) {
  const GemmTemplateConfig& c = spec.config;
  if (c.family == GemmFamily::wgmma) return gemm_wgmma_shared_bytes(c);
  const size_t a = size_t(c.bm) * size_t(c.bk + 8);
  const size_t b = spec.trans_b ? size_t(c.bn) * size_t(c.bk + 8) : size_t(c.bk) * size_t(c.bn + 8);
  return size_t(c.stages) * (a + b) * 2;
}

std::string gemm_template_source(const std::string& name, const GemmTemplateSpec& spec) {
  check_gemm_spec(spec);
  const GemmTemplateConfig& c = spec.config;
  const GemmTemplateEpilogue& e = spec.epilogue;
  const bool bf16 = spec.dtype == DType::bf16;
  const bool wgmma = c.family == GemmFamily::wgmma;
  std::string s = fmt::format(
      "// GEMM template '{}', generated by kiln: tensor cores ({}), {}, B {}, tile {}x{}x{}, "
      "warps {}x{}, stages {}, split_k {}{}, group_m {}{}, epilogue {}.\n",
      name, wgmma ? "TMA + wgmma, warp-specialised" : "mma.sync m16n8k16", dtype_name(spec.dtype),
      spec.trans_b ? "[N,K]" : "[K,N]", c.bm, c.bn, c.bk, c.warps_m, c.warps_n, c.stages, c.split_k,
      c.cluster_reduce ? " (a cluster)" : "", c.group_m, c.persistent ? ", persistent" : "", gemm_epilogue_name(e));
  s += codegen::cuda::cuda_scalar_preamble();
  s += fmt::format(
      "\n#define KILN_GEMM_NAME {0}\n#define KILN_GEMM_REDUCE_NAME {0}_reduce\n"
      "#define BM {1}\n#define BN {2}\n#define BK {3}\n#define WARPS_M {4}\n#define WARPS_N {5}\n"
      "#define THREADS {6}\n#define STAGES {7}\n#define SPLIT_K {8}\n#define GROUP_M {9}\n#define TRANS_B {10}\n"
      "#define EPI_BIAS {11}\n#define EPI_ACT {12}\n#define EPI_RES {13}\n#define REDUCE_THREADS {14}\n"
      "#define KILN_WIDEN {15}\n#define KILN_NARROW {16}\n#define KILN_PTX_TYPE \"{17}\"\n#define CLUSTER_K {18}\n{19}",
      name, c.bm, c.bn, c.bk, c.warps_m, c.warps_n, c.threads(), c.stages, c.split_k, c.group_m,
      spec.trans_b ? 1 : 0, e.bias ? 1 : 0, static_cast<int>(e.activation), e.residual ? 1 : 0, kGemmReduceThreads,
      bf16 ? "kiln_bf16_to_f32" : "kiln_f16_to_f32", bf16 ? "kiln_f32_to_bf16" : "kiln_f32_to_f16",
      bf16 ? "bf16" : "f16", c.cluster_reduce ? c.split_k : 0,
      // The kernels test it with #ifdef.
      e.row_norm ? "#define EPI_NORM 1\n" : "");
  s += kGemmShared;
  s += wgmma ? gemm_wgmma_body(spec) : std::string(kGemmBody);
  s += kGemmReduce;
  return s;
}

}  // namespace kiln::backend::cuda
