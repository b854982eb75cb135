// The row_norm part of the GEMM template's Hopper kernel (GemmTemplateEpilogue::row_norm): LayerNorm
// folded into the product that reads its output. The consumers gather each row's statistics from the
// A tiles the TMA brings anyway, apply rstd (acc - mean colsum) before the epilogue, and may write the
// LayerNorm's output y for its other readers. Written before the kernel (cuda_gemm_wgmma_source.cpp),
// which calls these where EPI_NORM is defined.
#include "backend/cuda/cuda_gemm_template_parts.h"

namespace kiln::backend::cuda {

std::string gemm_row_norm_helpers() {
  return R"(
#ifdef EPI_NORM
// The kernel's last parameter, by value (GemmTemplateArgs' norm_* fields).
struct KilnRowNorm {
  const float* colsum;            // [n]: sum over K of B's row col
  const unsigned short* x;        // A (row stride ldx), read again for y
  const float* gamma;             // [k]
  const float* beta;              // [k]
  unsigned short* y;              // [m, k], row stride ldy: (x - mean) rstd gamma + beta; 0: not written
  long long ldx, ldy;
  float eps;
};
#define KILN_NORM_PARAM , const KilnRowNorm norm
// A row's running sums, shifted by its first element (so that the variance's E[d^2] - E[d]^2 does not
// cancel for rows far from zero; a constant row sums exact zeros).
struct KilnMoments {
  float shift, s1, s2;
};
// One K step of this thread's half row: consumer warp `warp` (rows at `rows`, 64 of 128 bytes, 128-byte
// swizzled: a row's 16-byte pieces permuted within its own 128 bytes, piece p holding columns
// 8 (p ^ row % 8) ..) reads with lane l four of the 8 pieces of row r = 16 warp + l % 16: pieces
// (2 i + l / 16 + r) % 8, so that the 8 lanes of a shared-memory phase (8 rows) read 8 different pieces,
// all 32 banks (the same piece of every row would be one bank group, 8-way conflicts). `left`: the K
// columns of this step that lie inside A (the TMA's zero fill past K must not count); `first`: the unit's
// first step, where the shift is read (column 0 lies in piece r % 8). Four pieces, four sums in flight.
KILN_DEV void kiln_norm_step(unsigned rows, int warp, int lane, long long left, bool first, KilnMoments& s) {
  const int row = warp * 16 + lane % 16;
  const unsigned line = rows + 128u * (unsigned)row;
  if (first) {
    unsigned short w;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(w) : "r"(line + 16u * (unsigned)(row % 8)));
    s.shift = kiln_word_to_f32(w);
  }
  float s1[4], s2[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int piece = (2 * i + lane / 16 + row) % 8, col = 8 * (piece ^ (row % 8));
    unsigned w[4];
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(line + 16u * (unsigned)piece));
    s1[i] = 0.0f, s2[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float v = kiln_word_to_f32((unsigned short)(w[j / 2] >> (16 * (j % 2))));
      const float d = col + j < left ? v - s.shift : 0.0f;
      s1[i] += d;
      s2[i] = fmaf(d, d, s2[i]);
    }
  }
  s.s1 += (s1[0] + s1[1]) + (s1[2] + s1[3]);
  s.s2 += (s2[0] + s2[1]) + (s2[2] + s2[3]);
}
// The row's mean and 1 / sqrt(variance + eps) (population variance over k columns) in both lanes whose
// lane % 16 is its row.
KILN_DEV void kiln_norm_finish(const KilnMoments& s, long long k, float eps, float& mean, float& rstd) {
  const float s1 = s.s1 + __shfl_xor_sync(0xffffffffu, s.s1, 16), s2 = s.s2 + __shfl_xor_sync(0xffffffffu, s.s2, 16);
  const float m1 = s1 / (float)k;
  float var = s2 / (float)k - m1 * m1;
  var = var < 0.0f ? 0.0f : var;  // rounding; NaN stays NaN
  mean = s.shift + m1;
  rstd = 1.0f / sqrtf(var + eps);
}
// y for this warp's 16 rows (from row0 on) over this tile's share of the K columns: tile column t of
// tiles_n writes columns [t ceil(k / tiles_n), ...), so that the blocks of a tile row write y once. A lane
// a column, its 16 rows' loads in flight together.
KILN_DEV void kiln_norm_write_y(const KilnRowNorm& norm, float mean, float rstd, long long row0, long long m,
                                long long k, long long tile_n, long long tiles_n, int lane) {
  const long long share = (k + tiles_n - 1) / tiles_n, c0 = tile_n * share;
  const long long c1 = c0 + share < k ? c0 + share : k;
  for (long long base = c0; base < c1; base += 32) {
    const long long col = base + lane;
    const bool in = col < c1;
    const float gamma = in ? norm.gamma[col] : 0.0f, beta = in ? norm.beta[col] : 0.0f;
    float x[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) x[r] = in && row0 + r < m ? kiln_word_to_f32(norm.x[(row0 + r) * norm.ldx + col]) : 0.0f;
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const float mu = __shfl_sync(0xffffffffu, mean, r), rs = __shfl_sync(0xffffffffu, rstd, r);
      if (in && row0 + r < m) norm.y[(row0 + r) * norm.ldy + col] = kiln_f32_to_word((x[r] - mu) * rs * gamma + beta);
    }
  }
}
#else
#define KILN_NORM_PARAM
#endif
)";
}

}  // namespace kiln::backend::cuda
