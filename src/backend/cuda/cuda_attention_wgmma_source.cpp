// The Hopper attention kernel's CUDA C++ (sm_90a; bf16 and f16 at head dims 64 and 128), in the
// FlashAttention-3 form: a block takes 64 query rows per consumer warpgroup
// (one or two) of one (batch, head). Warpgroup 0 is the producer: one thread issues TMA box copies of Q
// (once) and of K and V tiles of KT keys into a two-stage ring, each tile a "full" mbarrier (its bytes
// arrived) and an "empty" one (every consumer warp is done with it), K's and V's apart so that S = Q K^T
// starts before V has arrived. A consumer computes S = Q K^T by wgmma m64nKTk16 with both operands in
// shared memory, runs the online softmax on the accumulators in registers, and O += P V by wgmma m64n64k16
// with P from registers (the S accumulators rounded and packed: their layout is the A fragment's) and V
// read N-major (its rows are keys) through the instruction's transpose. Each consumer issues the next
// tile's Q K^T beside this tile's P V and runs the next softmax while P V is in flight (not yet
// FlashAttention-3's ping-pong of two consumers). TMA zero-fills rows past Sq and
// Sk; keys past Sk are -inf in the scores. The scores, softmax step and store are the mma.sync kernel's
// (cuda_attention_parts.cpp), so are the semantics.
#include <fmt/format.h>

#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_attention_parts.h"
#include "backend/cuda/hopper_device_source.h"
#include "codegen/cuda/scalar_cuda.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

constexpr int kStages = 2;

// acc (= or +=) Q K^T: A (64 x 16 at da) and B (KT keys x 16 at db), both K-major in shared memory.
// The register list "%0, %1, ..." of `count` accumulators and their "+f" operands, accumulator i being
// `element` with its row i / 4 and column i % 4 put in.
struct Accumulators {
  std::string list, operands;
};
Accumulators accumulators(int count, const char* element) {
  Accumulators a;
  for (int i = 0; i < count; ++i) {
    a.list += fmt::format("{}%{}", i ? ", " : "", i);
    a.operands += fmt::format("{}\"+f\"(", i ? ", " : "") + fmt::format(fmt::runtime(element), i / 4, i % 4) + ")";
  }
  return a;
}

std::string qk_instruction(const char* type, int kt) {
  const auto [list, operands] = accumulators(kt / 2, "d[{}][{}]");
  return fmt::format(
      "KILN_DEV void kiln_wgmma_qk(float (&d)[KT / 8][4], unsigned long long da, unsigned long long db, int accumulate) {{\n"
      "  asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %{0}, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {{{3}}}, %{4}, %{5}, p, 1, 1, 0, 0;\\n}}\\n\"\n"
      "      : {6}\n      : \"r\"(accumulate), \"l\"(da), \"l\"(db));\n}}\n",
      kt / 2, kt, type, list, kt / 2 + 1, kt / 2 + 2, operands);
}

// O[:, 64 kBox ...] += P V: A (P's 64 x 16 fragment in registers) and B (16 keys x 64 columns of V at db,
// N-major: the transpose flag 1).
std::string pv_instruction(const char* type) {
  const auto [list, operands] = accumulators(32, "d[kBox * 8 + {}][{}]");
  return fmt::format(
      "template <int kBox>\n"
      "KILN_DEV void kiln_wgmma_pv(float (&d)[D / 8][4], const unsigned (&a)[4], unsigned long long db) {{\n"
      "  asm volatile(\"{{\\n .reg .pred p;\\n setp.ne.b32 p, %37, 0;\\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.{0}.{0} {{{1}}}, {{%32, %33, %34, %35}}, %36, p, 1, 1, 1;\\n}}\\n\"\n"
      "      : {2}\n      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db), \"r\"(1));\n}}\n",
      type, list, operands);
}

constexpr const char* kBody = R"(
#define THREADS (128 * (CONSUMERS + 1))
#define QT (64 * CONSUMERS)       // query rows a block
#define DB (D / 64)               // 64-column (128-byte) boxes a row
#define Q_BOX (QT * 128)          // bytes of one box column of Q's tile
#define KV_BOX (KT * 128)         // ... of a K or V tile
#define KV_TILE (DB * KV_BOX)
#define Q_BYTES (DB * Q_BOX)

KILN_DEV unsigned kiln_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// Keeps the compiler from moving reads of accumulators above the wait that completes them.
template <int N>
KILN_DEV void kiln_fence_acc(float (&d)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+f"(d[i][j]) :: "memory");
}

// S = Q K^T for the K tile at k_tile (its bytes arrived): issued and committed, not waited on.
KILN_DEV void kiln_issue_qk(float (&s)[KT / 8][4], unsigned q_rows, unsigned k_tile) {
  kiln_wgmma_fence();
#pragma unroll
  for (int x = 0; x < DB; ++x)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      kiln_wgmma_qk(s, kiln_desc(q_rows + x * Q_BOX) + 2ull * kk, kiln_desc(k_tile + x * KV_BOX) + 2ull * kk, x + kk);
  kiln_wgmma_commit();
}
// O += P V for the V tile at v_tile, 16 keys a step (V's rows 16 kk.. start 2048 kk bytes in): issued and
// committed, not waited on.
KILN_DEV void kiln_issue_pv(float (&o)[D / 8][4], const unsigned (&p)[KT / 16][4], unsigned v_tile) {
  kiln_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < KT / 16; ++kk) {
    kiln_wgmma_pv<0>(o, p[kk], kiln_desc(v_tile + kk * 2048));
#if DB == 2
    kiln_wgmma_pv<1>(o, p[kk], kiln_desc(v_tile + KV_BOX + kk * 2048));
#endif
  }
  kiln_wgmma_commit();
}

// Q, K and V through 4-D tensor maps (head dim, sequence, head, batch); strides in elements of the mask
// (broadcast ones 0) and the output ([b, h, s, d]).
extern "C" __global__ void __launch_bounds__(THREADS, 1) KILN_ATTENTION_NAME(
    const __grid_constant__ KilnTensorMap map_q, const __grid_constant__ KilnTensorMap map_k,
    const __grid_constant__ KilnTensorMap map_v, const unsigned short* __restrict__ in3,
    unsigned short* __restrict__ out, long long heads, long long sq, long long sk, long long mb, long long mh,
    long long ms, long long mk, long long ob, long long oh, long long os, long long od, float scale) {
  kiln_grid_prologue();
  extern __shared__ __align__(1024) unsigned char kiln_tiles[];
  const unsigned q_s = (kiln_smem(kiln_tiles) + 1023u) & ~1023u;  // the swizzle needs 1 KB alignment
  const unsigned k_s = q_s + Q_BYTES, v_s = k_s + STAGES * KV_TILE;
  // q_full, then k_full[s], v_full[s], k_empty[s], v_empty[s]
  const unsigned q_full = v_s + STAGES * KV_TILE, k_full = q_full + 8, v_full = k_full + 8 * STAGES,
                 k_empty = v_full + 8 * STAGES, v_empty = k_empty + 8 * STAGES;
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int b = (int)(blockIdx.x / heads), h = (int)(blockIdx.x % heads);
  const long long q0 = (long long)blockIdx.y * QT;
  const int tiles = (int)((sk + KT - 1) / KT);
  if (threadIdx.x == 0) {
    kiln_bar_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      kiln_bar_init(k_full + 8 * s, 1);  // the producer's expect_tx
      kiln_bar_init(v_full + 8 * s, 1);
      kiln_bar_init(k_empty + 8 * s, CONSUMERS * 4);  // one arrival a consumer warp
      kiln_bar_init(v_empty + 8 * s, CONSUMERS * 4);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {  // the producer
#if CONSUMERS == 2
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
#endif
    if (threadIdx.x == 0) {
      kiln_bar_expect(q_full, Q_BYTES);  // whole boxes count, zero-filled rows too
#pragma unroll
      for (int x = 0; x < DB; ++x) kiln_tma_load4(q_s + x * Q_BOX, &map_q, q_full, 64 * x, (int)q0, h, b);
      for (int tile = 0; tile < tiles; ++tile) {
        const int st = tile % STAGES;
        const unsigned parity = ((unsigned)(tile / STAGES) & 1u) ^ 1u;
        kiln_bar_wait(k_empty + 8 * st, parity);
        kiln_bar_expect(k_full + 8 * st, KV_TILE);
#pragma unroll
        for (int x = 0; x < DB; ++x)
          kiln_tma_load4(k_s + st * KV_TILE + x * KV_BOX, &map_k, k_full + 8 * st, 64 * x, tile * KT, h, b);
        kiln_bar_wait(v_empty + 8 * st, parity);
        kiln_bar_expect(v_full + 8 * st, KV_TILE);
#pragma unroll
        for (int x = 0; x < DB; ++x)
          kiln_tma_load4(v_s + st * KV_TILE + x * KV_BOX, &map_v, v_full + 8 * st, 64 * x, tile * KT, h, b);
      }
    }
    return;
  }
#if CONSUMERS == 2
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
#endif
  const int cw = wg - 1, g = lane / 4, t = lane % 4;
  // This thread's rows: row0 = q0 + 64 cw + 16 warp + g and row0 + 8.
  const long long row0 = q0 + cw * 64 + warp * 16 + g;
{mask_rows}
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m[2] = {-kiln_inf_f32(), -kiln_inf_f32()}, l[2] = {0.0f, 0.0f};  // l: this thread's part of the sum
  const unsigned q_rows = q_s + (unsigned)cw * 64u * 128u;  // this consumer's 64 rows in each box
  float s[KT / 8][4], alpha[2];
  unsigned p[KT / 16][4], mask_w[KT / 8][2];
  kiln_bar_wait(q_full, 0);
#if OVERLAP
  // The first tile's scores and probabilities before the loop; each step then issues the next tile's
  // Q K^T and this tile's P V, and runs the next tile's softmax while P V is in flight.
  if (tiles > 0) {
    [[maybe_unused]] const long long key0 = 0;
    const int keys_here = (int)(sk < KT ? sk : KT);
{mask_load}    kiln_bar_wait(k_full, 0);
    kiln_issue_qk(s, q_rows, k_s);
    kiln_wgmma_wait<0>();
    kiln_fence_acc(s);
    if (lane == 0) kiln_bar_arrive(k_empty);
    kiln_scores(s, mask_w, scale, t, keys_here);
    kiln_online_softmax(s, m, l, alpha, scale);
#pragma unroll
    for (int kk = 0; kk < KT / 16; ++kk) kiln_p_fragment(p[kk], s, kk);
  }
  for (int tile = 0; tile + 1 < tiles; ++tile) {
    const int st = tile % STAGES, nst = (tile + 1) % STAGES;
    const long long key0 = (long long)(tile + 1) * KT;  // the next tile's
    const int keys_here = (int)(sk - key0 < KT ? sk - key0 : KT);
{mask_load}    kiln_bar_wait(k_full + 8 * nst, (unsigned)((tile + 1) / STAGES) & 1u);
    kiln_issue_qk(s, q_rows, k_s + nst * KV_TILE);
    kiln_bar_wait(v_full + 8 * st, (unsigned)(tile / STAGES) & 1u);
    kiln_issue_pv(o, p, v_s + st * KV_TILE);
    kiln_wgmma_wait<1>();  // the next tile's scores are in; P V is still running
    kiln_fence_acc(s);
    if (lane == 0) kiln_bar_arrive(k_empty + 8 * nst);
    kiln_scores(s, mask_w, scale, t, keys_here);
    kiln_online_softmax(s, m, l, alpha, scale);
    kiln_wgmma_wait<0>();
    kiln_fence_acc(o);
    if (lane == 0) kiln_bar_arrive(v_empty + 8 * st);
    kiln_rescale(o, alpha);
#pragma unroll
    for (int kk = 0; kk < KT / 16; ++kk) kiln_p_fragment(p[kk], s, kk);
  }
  if (tiles > 0) {  // the last tile's P V
    const int st = (tiles - 1) % STAGES;
    kiln_bar_wait(v_full + 8 * st, (unsigned)((tiles - 1) / STAGES) & 1u);
    kiln_issue_pv(o, p, v_s + st * KV_TILE);
    kiln_wgmma_wait<0>();
    kiln_fence_acc(o);
    if (lane == 0) kiln_bar_arrive(v_empty + 8 * st);
  }
#else
  for (int tile = 0; tile < tiles; ++tile) {
    const long long key0 = (long long)tile * KT;
    const int st = tile % STAGES;
    const unsigned parity = (unsigned)(tile / STAGES) & 1u;
    const int keys_here = (int)(sk - key0 < KT ? sk - key0 : KT);
{mask_load}    kiln_bar_wait(k_full + 8 * st, parity);
    kiln_issue_qk(s, q_rows, k_s + st * KV_TILE);
    kiln_wgmma_wait<0>();
    kiln_fence_acc(s);
    if (lane == 0) kiln_bar_arrive(k_empty + 8 * st);
    // Scale, mask and -inf past Sk (rows past Sq read row Sq - 1's mask; they are never stored).
    kiln_scores(s, mask_w, scale, t, keys_here);
    kiln_online_softmax(s, m, l, alpha, scale);
    kiln_rescale(o, alpha);
#pragma unroll
    for (int kk = 0; kk < KT / 16; ++kk) kiln_p_fragment(p[kk], s, kk);
    kiln_bar_wait(v_full + 8 * st, parity);
    kiln_issue_pv(o, p, v_s + st * KV_TILE);
    kiln_wgmma_wait<0>();
    kiln_fence_acc(o);
    if (lane == 0) kiln_bar_arrive(v_empty + 8 * st);
  }
#endif
  const bool paired = od == 1 && ((ob | oh | os) & 1) == 0 && ((unsigned long long)out & 3) == 0;
  kiln_store_rows(o, m, l, row0, sq, out + b * ob + h * oh, os, od, paired, t);
}
)";

}  // namespace

// Keys a tile: 128 (64 S accumulators a thread) where the registers hold them beside O and P, 64 where
// two consumers at head dim 128 would spill.
int attention_wgmma_keys_a_tile(const AttentionSpec& spec) {
  return spec.head_dim == 128 && spec.wgmma_consumers == 2 ? 64 : 128;
}

bool attention_uses_wgmma(const AttentionSpec& spec) {
  return (spec.dtype == DType::bf16 || spec.dtype == DType::f16) && (spec.head_dim == 64 || spec.head_dim == 128);
}

int attention_wgmma_consumers(int64_t batch_heads, int64_t sq, int sm_count) {
  if (batch_heads <= 0 || sq <= 0 || sm_count <= 0) return 2;  // symbolic
  // Waves of blocks times a block's time: one of two consumers took 1.23-1.31x one of one on the H200
  // (S = 512, 2048, 8192; docs/PERFORMANCE.md, session 16), so 1.3.
  auto waves = [&](int64_t c) { return (batch_heads * ((sq + 64 * c - 1) / (64 * c)) + sm_count - 1) / sm_count; };
  return double(waves(1)) < 1.3 * double(waves(2)) ? 1 : 2;
}

size_t attention_wgmma_shared_bytes(const AttentionSpec& spec) {
  const size_t box_rows = size_t(64 * spec.wgmma_consumers) + 2 * kStages * size_t(attention_wgmma_keys_a_tile(spec));
  return box_rows * 128 * size_t(spec.head_dim / 64) + 1024 + 8 * (1 + 4 * kStages);
}

std::string attention_wgmma_source(const std::string& name, const AttentionSpec& spec) {
  KILN_INTERNAL_CHECK(attention_uses_wgmma(spec), "wgmma attention: {} head dim {}", dtype_name(spec.dtype),
                      spec.head_dim);
  KILN_INTERNAL_CHECK(spec.wgmma_consumers == 1 || spec.wgmma_consumers == 2, "wgmma attention: {} consumers",
                      spec.wgmma_consumers);
  const int kt = attention_wgmma_keys_a_tile(spec);
  const char* type = spec.dtype == DType::bf16 ? "bf16" : "f16";
  std::string c = fmt::format(
      "// Attention kernel '{}', generated by kiln: TMA + wgmma, {} head dim {}, {} consumer warpgroups, {} keys a "
      "tile, {}{}{}.\n",
      name, dtype_name(spec.dtype), spec.head_dim, spec.wgmma_consumers, kt,
      spec.wgmma_overlap ? "softmax beside the next tile's Q K^T" : "tiles one after another",
      spec.mask ? ", additive mask" : "", spec.guard ? ", NaN rows give zeros" : "");
  c += codegen::cuda::cuda_scalar_preamble();
  c += fmt::format("\n#define KILN_ATTENTION_NAME {}\n#define D {}\n#define KT {}\n#define CONSUMERS {}\n#define STAGES {}\n#define OVERLAP {}\n",
                   name, spec.head_dim, kt, spec.wgmma_consumers, kStages, spec.wgmma_overlap ? 1 : 0);
  c += attention_tile_helpers(spec);
  c += hopper_device_helpers();
  c += qk_instruction(type, kt) + pv_instruction(type);
  std::string body = kBody;
  auto put = [&](const std::string& key, const std::string& text) {
    for (size_t at; (at = body.find(key)) != std::string::npos;) body.replace(at, key.size(), text);
  };
  put("{mask_rows}", attention_mask_rows(spec));
  put("{mask_load}", attention_mask_load(spec));
  return c + body;
}

}  // namespace kiln::backend::cuda
