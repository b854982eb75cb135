// The GEMM template's Hopper kernel (sm_90a): C[M,N] = epilogue(A B^T), A [M,K] and B [N,K] both K-major.
//
// Warp-specialised: warpgroup 0 is the producer, one thread of which issues two tensor-memory-accelerator
// (TMA) copies a K step (A's BM x 64 box and B's BN x 64 box, 128-byte swizzled) into a ring of STAGES
// shared-memory stages; each stage has a "full" mbarrier (the copies' bytes arrived) and an "empty" one
// (every consumer warp is done reading it). Warpgroups 1 (and 2) are the consumers, 64 rows of the tile
// each: per K step four wgmma m64nBNk16 read both operands straight from shared memory through matrix
// descriptors, accumulating in fp32 registers; one group of them stays in flight while the previous
// stage is released. TMA zero-fills what lies past the matrices, so tails in M, N and K need no masks
// until the store. The epilogue (shared kiln_epilogue) is applied to the registers and stored directly;
// with split-K the partials go to an fp32 workspace that the shared reduce kernel sums in split order,
// or, with the splits of a tile as one thread-block cluster (cluster_reduce), stay in each block's shared
// memory, where the cluster sums them over distributed shared memory in the same order and stores C.
// Persistent launches walk the tiles with a grid stride; the producer runs ahead into the next tile while
// the consumers store the last one.
#include <fmt/format.h>

#include "backend/cuda/cuda_gemm_template_parts.h"
#include "backend/cuda/hopper_device_source.h"

namespace kiln::backend::cuda {
namespace {

// Everything but the wgmma instruction itself (kiln_wgmma, written before this for the config's BN).
constexpr const char* kWgmmaBody = R"(
#define CONSUMERS (BM / 64)
#define ACC (BN / 2)                  // fp32 accumulators a consumer thread: 64 x BN over 128 threads
#define A_BYTES (BM * BK * 2)         // a stage's A tile: BM rows of 128 bytes
#define STAGE_BYTES ((BM + BN) * BK * 2)
#define CONSUMER_THREADS (CONSUMERS * 128)

#if CLUSTER_K > 1
// The CLUSTER_K splits of a tile are one cluster: block rank s of it is split s (blockIdx.x % CLUSTER_K).
#define KILN_CLUSTER __cluster_dims__(CLUSTER_K, 1, 1)
// Every thread of every block of the cluster arrives; shared-memory writes before it are visible to the
// cluster's reads after it.
KILN_DEV void kiln_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
KILN_DEV void kiln_store_shared4(unsigned addr, float a, float b, float c, float d) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
// The four floats at `addr` (an address in this block's shared memory) of the cluster's block `rank`.
KILN_DEV void kiln_cluster_load4(unsigned addr, unsigned rank, float (&v)[4]) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(remote) : "memory");
}
#else
#define KILN_CLUSTER
#endif

// Keeps the compiler from moving reads of the accumulators above the wait that completes them.
KILN_DEV void kiln_fence_acc(float (&d)[ACC]) {
#pragma unroll
  for (int i = 0; i < ACC; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

extern "C" __global__ void KILN_CLUSTER __launch_bounds__(THREADS, 1) KILN_GEMM_NAME(
    const __grid_constant__ KilnTensorMap map_a, const __grid_constant__ KilnTensorMap map_b,
    unsigned short* __restrict__ c, const float* __restrict__ bias, const unsigned short* __restrict__ res,
    float* __restrict__ ws, long long m, long long n, long long k, long long ldc, long long ldr, long long k_split
    KILN_NORM_PARAM) {
  kiln_grid_prologue();
  extern __shared__ __align__(1024) unsigned char kiln_tiles[];
  const unsigned base = (kiln_smem(kiln_tiles) + 1023u) & ~1023u;  // the swizzle needs 1 KB alignment
  const unsigned bars = base + STAGES * STAGE_BYTES;  // full[s] at bars + 8 s, empty[s] at bars + 8 (STAGES + s)
#if CLUSTER_K > 1
  // The split's fp32 partials, 16 bytes (accumulators 4 j .. 4 j + 3) at red + 16 (j CONSUMER_THREADS + ct)
  // for consumer thread ct: the same place in every block of the cluster.
  const unsigned red = bars + 16 * STAGES;
#endif
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      kiln_bar_init(bars + 8 * s, 1);                            // the producer's expect_tx
      kiln_bar_init(bars + 8 * (STAGES + s), CONSUMERS * 4);  // one arrival a consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  const long long tiles_m = (m + BM - 1) / BM, tiles_n = (n + BN - 1) / BN;
  const long long units = tiles_m * tiles_n * SPLIT_K;
  // A unit is (tile, split): tiles in grouped order (GROUP_M tile rows at a time), K in whole BK steps.
  auto place = [&](long long unit, long long& m0, long long& n0, long long& k0, int& steps) {
    const long long tile = unit / SPLIT_K, split = unit % SPLIT_K;
    const long long in_group = (long long)GROUP_M * tiles_n, first_m = tile / in_group * GROUP_M;
    const long long rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    m0 = (first_m + tile % in_group % rows) * BM;
    n0 = tile % in_group / rows * BN;
    k0 = split * k_split;
    const long long k1 = k0 + k_split < k ? k0 + k_split : k;
    steps = k1 > k0 ? (int)((k1 - k0 + BK - 1) / BK) : 0;
  };

  if (wg == 0) {  // the producer
#if CONSUMERS == 2
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
#endif
    if (threadIdx.x == 0) {
      int it = 0;  // K steps loaded so far, over every unit: the ring position
      for (long long unit = blockIdx.x; unit < units; unit += gridDim.x) {
        long long m0, n0, k0;
        int steps;
        place(unit, m0, n0, k0, steps);
        for (int s = 0; s < steps; ++s, ++it) {
          const int st = it % STAGES;
          kiln_bar_wait(bars + 8 * (STAGES + st), ((unsigned)(it / STAGES) & 1u) ^ 1u);
          const unsigned full = bars + 8 * st, tile = base + (unsigned)st * STAGE_BYTES;
          kiln_bar_expect(full, STAGE_BYTES);  // the whole boxes count, zero-filled parts too
          const int kc = (int)(k0 + (long long)s * BK);
          kiln_tma_load(tile, &map_a, full, kc, (int)m0);
          kiln_tma_load(tile + A_BYTES, &map_b, full, kc, (int)n0);
        }
      }
    }
#if CLUSTER_K > 1
    kiln_cluster_sync();  // the consumers' partials are written ...
    kiln_cluster_sync();  // ... and read: this block's shared memory may go
#endif
  } else {  // a consumer
#if CONSUMERS == 2
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
#endif
    const int cw = wg - 1;  // this consumer's 64 rows of the tile
    const int g = lane / 4, t = lane % 4;
#if SPLIT_K == 1
    // Two adjacent columns as one 32-bit store where C's rows are even and its address 4-byte aligned.
    const bool paired = (ldc & 1) == 0 && ((unsigned long long)c & 3) == 0;
#endif
    float acc[ACC];
    int it = 0;
    for (long long unit = blockIdx.x; unit < units; unit += gridDim.x) {
      long long m0, n0, k0;
      int steps;
      place(unit, m0, n0, k0, steps);
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
#ifdef EPI_NORM
      KilnMoments moments = {0.0f, 0.0f, 0.0f};
#endif
      int previous = 0;
      for (int s = 0; s < steps; ++s, ++it) {
        const int st = it % STAGES;
        kiln_bar_wait(bars + 8 * st, (unsigned)(it / STAGES) & 1u);
        const unsigned tile = base + (unsigned)st * STAGE_BYTES;
        const unsigned long long da = kiln_desc(tile + (unsigned)cw * 64u * 128u), db = kiln_desc(tile + A_BYTES);
        kiln_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) kiln_wgmma(acc, da + 2ull * kk, db + 2ull * kk);
        kiln_wgmma_commit();
#ifdef EPI_NORM
        // While the products run: this step's part of the row statistics, from the same A tile.
        kiln_norm_step(tile + (unsigned)cw * 64u * 128u, warp, lane, k - (k0 + (long long)s * BK), s == 0, moments);
#endif
        // The previous step's products are done: its stage may be refilled. (The waits are unconditional:
        // ptxas serialises every wgmma when one sits on a divergent path.)
        kiln_wgmma_wait<1>();
#ifdef EPI_NORM
        __syncwarp();  // every lane's statistics reads of the stage come before lane 0 releases it
#endif
        if (s > 0 && lane == 0) kiln_bar_arrive(bars + 8 * (STAGES + previous));
        previous = st;
      }
      kiln_wgmma_wait<0>();
#ifdef EPI_NORM
      __syncwarp();
#endif
      if (steps > 0 && lane == 0) kiln_bar_arrive(bars + 8 * (STAGES + previous));
      kiln_fence_acc(acc);
#ifdef EPI_NORM
      float norm_mean, norm_rstd;  // of row 16 warp + lane % 16 of this consumer's 64
      kiln_norm_finish(moments, k, norm.eps, norm_mean, norm_rstd);
      // The accumulators' rows: g and g + 8 of this warp's 16.
      const float mean_h[2] = {__shfl_sync(0xffffffffu, norm_mean, g), __shfl_sync(0xffffffffu, norm_mean, g + 8)};
      const float rstd_h[2] = {__shfl_sync(0xffffffffu, norm_rstd, g), __shfl_sync(0xffffffffu, norm_rstd, g + 8)};
#endif

#if CLUSTER_K > 1
      const unsigned ct = threadIdx.x - 128;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
        kiln_store_shared4(red + 16u * ((unsigned)j * CONSUMER_THREADS + ct), acc[4 * j], acc[4 * j + 1],
                           acc[4 * j + 2], acc[4 * j + 3]);
#else
      // Accumulator 4 j + 2 h + e is row r0 + 8 h, column c0 + 8 j + e.
      const long long r0 = m0 + cw * 64 + warp * 16 + g, c0 = n0 + 2 * t;
      // Four 8-column groups (16 accumulators) at a time: the epilogue over them first, without branches
      // (indices clamped into the matrix, the extra values never stored), so that ptxas overlaps their
      // GELUs and loads; then their stores. All 128 at once would not fit the consumers' registers.
#pragma unroll
      for (int j0 = 0; j0 < BN / 8; j0 += 4) {
#if SPLIT_K == 1
#pragma unroll
        for (int j = j0; j < j0 + 4 && j < BN / 8; ++j)
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const long long row = r0 + (q / 2) * 8, col = c0 + j * 8 + q % 2;
#ifdef EPI_NORM
            acc[4 * j + q] = rstd_h[q / 2] * fmaf(-mean_h[q / 2], norm.colsum[col < n ? col : n - 1], acc[4 * j + q]);
#endif
            acc[4 * j + q] =
                kiln_epilogue(acc[4 * j + q], bias, res, row < m ? row : m - 1, col < n ? col : n - 1, ldr);
          }
#endif
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long row = r0 + h * 8;
          if (row >= m) continue;
#pragma unroll
          for (int j = j0; j < j0 + 4 && j < BN / 8; ++j) {
            const long long col = c0 + j * 8;
            const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
#if SPLIT_K > 1
            float* w = ws + ((unit % SPLIT_K) * m + row) * n + col;
            if (col < n) w[0] = v0;
            if (col + 1 < n) w[1] = v1;
#else
            unsigned short* o = c + row * ldc + col;
            if (paired && col + 1 < n) {
              *(unsigned*)o = kiln_pack(v0, v1);
            } else {
              if (col < n) o[0] = kiln_f32_to_word(v0);
              if (col + 1 < n) o[1] = kiln_f32_to_word(v1);
            }
#endif
          }
        }
      }
#ifdef EPI_NORM
      if (norm.y) kiln_norm_write_y(norm, norm_mean, norm_rstd, m0 + cw * 64 + warp * 16, m, k, n0 / BN, tiles_n, lane);
#endif
#endif  // CLUSTER_K > 1
    }
#if CLUSTER_K > 1
    kiln_cluster_sync();  // every split's partials are in its block
    {
      long long m0, n0, k0;
      int steps;
      place(blockIdx.x, m0, n0, k0, steps);
      const unsigned rank = blockIdx.x % CLUSTER_K, ct = threadIdx.x - 128;
      const long long r0 = m0 + cw * 64 + warp * 16 + g, c0 = n0 + 2 * t;
      const bool paired = (ldc & 1) == 0 && ((unsigned long long)c & 3) == 0;
      // This block takes 8-column groups rank, rank + CLUSTER_K, ...: the splits summed in split order
      // (as the reduce kernel sums them), then the epilogue and C. Accumulator 4 j + 2 h + e of a thread
      // is row r0 + 8 h, column c0 + 8 j + e.
      for (int j = (int)rank; j < BN / 8; j += CLUSTER_K) {
        const unsigned word = red + 16u * ((unsigned)j * CONSUMER_THREADS + ct);
        float part[CLUSTER_K][4];
#pragma unroll
        for (int s = 0; s < CLUSTER_K; ++s) kiln_cluster_load4(word, (unsigned)s, part[s]);
        float x[4] = {part[0][0], part[0][1], part[0][2], part[0][3]};
#pragma unroll
        for (int s = 1; s < CLUSTER_K; ++s)
#pragma unroll
          for (int q = 0; q < 4; ++q) x[q] += part[s][q];
        const long long col = c0 + j * 8;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long row = r0 + h * 8;
          if (row >= m || col >= n) continue;
          const float v0 = kiln_epilogue(x[2 * h], bias, res, row, col, ldr);
          unsigned short* o = c + row * ldc + col;
          if (col + 1 < n) {
            const float v1 = kiln_epilogue(x[2 * h + 1], bias, res, row, col + 1, ldr);
            if (paired) {
              *(unsigned*)o = kiln_pack(v0, v1);
            } else {
              o[0] = kiln_f32_to_word(v0);
              o[1] = kiln_f32_to_word(v1);
            }
          } else {
            o[0] = kiln_f32_to_word(v0);
          }
        }
      }
    }
    kiln_cluster_sync();  // no block leaves while another reads its shared memory
#endif
  }
}
)";

// acc += A (64 x 16 at descriptor da) * B^T (BN x 16 at db): the instruction takes every accumulator as
// an operand, so its text is written for the config's BN.
std::string wgmma_instruction(const GemmTemplateSpec& spec) {
  const int regs = spec.config.bn / 2;
  const char* type = spec.dtype == DType::bf16 ? "bf16" : "f16";
  std::string list, operands;
  for (int i = 0; i < regs; ++i) {
    list += fmt::format("{}%{}", i ? ", " : "", i);
    operands += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  return fmt::format(
      "KILN_DEV void kiln_wgmma(float (&d)[{0}], unsigned long long da, unsigned long long db) {{\n"
      "  asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{4}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {{{3}}}, %{5}, %{6}, p, 1, 1, 0, 0;\\n}}\\n\"\n"
      "      : {7}\n      : \"r\"(1), \"l\"(da), \"l\"(db));\n}}\n",
      regs, spec.config.bn, type, list, regs, regs + 1, regs + 2, operands);
}

}  // namespace

std::string gemm_wgmma_body(const GemmTemplateSpec& spec) {
  return hopper_device_helpers() + wgmma_instruction(spec) + gemm_row_norm_helpers() + kWgmmaBody;
}

size_t gemm_wgmma_shared_bytes(const GemmTemplateConfig& c) {
  // Stages, alignment slack, mbarriers, and with a cluster reduce the tile's fp32 partials.
  return size_t(c.stages) * size_t(c.bm + c.bn) * size_t(c.bk) * 2 + 1024 + 16 * size_t(c.stages) +
         (c.cluster_reduce ? size_t(c.bm) * size_t(c.bn) * 4 : 0);
}

}  // namespace kiln::backend::cuda
