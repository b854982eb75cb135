// The tensor-core attention kernels' shared CUDA C++ (cuda_attention_parts.h). The semantics are the
// CUDA-core kernel's (cuda_attention.cpp): a row whose scores are all -inf, or hold NaN or +inf, is NaN
// (zeros with the guard); keys past Sk count as -inf; fp32 score arithmetic; P is rounded to the operands'
// type for the second product (as FlashAttention does), the row sums stay fp32.
#include "backend/cuda/cuda_attention_parts.h"

#include <fmt/format.h>

namespace kiln::backend::cuda {

std::string attention_tile_helpers(const AttentionSpec& spec) {
  const bool bf16 = spec.dtype == DType::bf16;
  return fmt::format(R"(
#define KILN_GUARD {guard}
#define KILN_MASKED {masked}
#define KILN_RAW_SCORES {raw}
KILN_DEV float kiln_word_to_f32(unsigned short w) {{ return {widen}(w); }}
KILN_DEV unsigned kiln_pack(float lo, float hi) {{
  return (unsigned){narrow}(lo) | ((unsigned){narrow}(hi) << 16);
}}
// max that returns NaN when either input is NaN; 2^x with subnormal results flushed to zero (a
// probability below 2^-126 of the row's largest changes no sum).
KILN_DEV float kiln_fmax_nan(float a, float b) {{
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}}
KILN_DEV float kiln_exp2(float x) {{
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}}
// The mask's words for this thread's scores of one tile, two keys a word (low half the even key),
// loaded before the tile's products so that their latency hides behind them. kMask 1: keys contiguous
// and pairs of words 4-byte aligned, one 32-bit load a pair; 2: any strides. Keys past keys_here: 0.
template <int kMask>
KILN_DEV void kiln_mask_words(unsigned (&w)[KT / 8][2], int t, int keys_here, const unsigned short* m0,
                              const unsigned short* m1, long long mk) {{
#pragma unroll
  for (int n = 0; n < KT / 8; ++n)
#pragma unroll
    for (int half = 0; half < 2; ++half) {{  // row0, then row1
      const int c = n * 8 + 2 * t;
      const unsigned short* mr = half == 0 ? m0 : m1;
      if (kMask == 1)
        w[n][half] = c + 1 < keys_here ? *(const unsigned*)(mr + c) : c < keys_here ? (unsigned)mr[c] : 0u;
      else
        w[n][half] = (c < keys_here ? (unsigned)mr[c * mk] : 0u) | (c + 1 < keys_here ? (unsigned)mr[(c + 1) * mk] << 16 : 0u);
    }}
}}
// The scores of one tile scaled, plus the mask's words when there is one (one rounding), -inf past
// keys_here; KILN_RAW_SCORES (no mask, a positive scale) leaves them unscaled: kiln_online_softmax
// scales them inside its exponents. A full tile takes no per-key test.
KILN_DEV void kiln_scores(float (&s)[KT / 8][4], const unsigned (&w)[KT / 8][2], float scale, int t, int keys_here) {{
  if (keys_here == KT) {{
#if !KILN_RAW_SCORES
#pragma unroll
    for (int n = 0; n < KT / 8; ++n)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#if KILN_MASKED
        s[n][i] = fmaf(s[n][i], scale, kiln_word_to_f32((unsigned short)(i & 1 ? w[n][i / 2] >> 16 : w[n][i / 2] & 0xffffu)));
#else
        s[n][i] = __fmul_rn(s[n][i], scale);
#endif
#endif
    return;
  }}
#pragma unroll
  for (int n = 0; n < KT / 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) {{
      const int c = n * 8 + 2 * t + (i & 1);
#if KILN_RAW_SCORES
      const float x = s[n][i];
#elif KILN_MASKED
      const float x = fmaf(s[n][i], scale, kiln_word_to_f32((unsigned short)(i & 1 ? w[n][i / 2] >> 16 : w[n][i / 2] & 0xffffu)));
#else
      const float x = __fmul_rn(s[n][i], scale);
#endif
      s[n][i] = c < keys_here ? x : -kiln_inf_f32();
    }}
}}
// One tile's online-softmax step: the running maxima m and this thread's parts l of the row sums move
// on over the tile's scores s (maxima over the quad of threads that share the rows), s becomes the tile's
// unnormalised probabilities, and alpha the factor for the output so far. m is in the scores' units
// (unscaled under KILN_RAW_SCORES, where the positive scale keeps their order).
KILN_DEV void kiln_online_softmax(float (&s)[KT / 8][4], float (&m)[2], float (&l)[2], float (&alpha)[2], float scale) {{
  const float kLog2e = KILN_RAW_SCORES ? scale * 1.4426950408889634f : 1.4426950408889634f;
  float tile_max[2] = {{-kiln_inf_f32(), -kiln_inf_f32()}};
#pragma unroll
  for (int n = 0; n < KT / 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) tile_max[i / 2] = kiln_fmax_nan(tile_max[i / 2], s[n][i]);
  float m_ref[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {{
    float x = tile_max[i];
    x = kiln_fmax_nan(x, __shfl_xor_sync(0xffffffffu, x, 1));
    x = kiln_fmax_nan(x, __shfl_xor_sync(0xffffffffu, x, 2));
    const float mn = kiln_fmax_nan(m[i], x);
    // Every score so far -inf: nothing to add yet (and -inf - -inf would be NaN): exponents from 0
    // give the -inf scores 0. NaN propagates.
    m_ref[i] = mn == -kiln_inf_f32() ? 0.0f : mn;
    alpha[i] = kiln_exp2((m[i] - m_ref[i]) * kLog2e);
    m[i] = mn;
  }}
  const float shift[2] = {{-m_ref[0] * kLog2e, -m_ref[1] * kLog2e}};
#pragma unroll
  for (int n = 0; n < KT / 8; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i) s[n][i] = kiln_exp2(fmaf(s[n][i], kLog2e, shift[i / 2]));
#pragma unroll
  for (int i = 0; i < 2; ++i) {{
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < KT / 8; ++n) sum += s[n][2 * i] + s[n][2 * i + 1];
    l[i] = l[i] * alpha[i] + sum;
  }}
}}
KILN_DEV void kiln_rescale(float (&o)[D / 8][4], const float (&alpha)[2]) {{
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {{
    o[n][0] *= alpha[0];
    o[n][1] *= alpha[0];
    o[n][2] *= alpha[1];
    o[n][3] *= alpha[1];
  }}
}}
// P's A fragment for keys 16 kk to 16 kk + 15: the probabilities of key groups 2 kk and 2 kk + 1.
KILN_DEV void kiln_p_fragment(unsigned (&p)[4], const float (&s)[KT / 8][4], int kk) {{
  p[0] = kiln_pack(s[2 * kk][0], s[2 * kk][1]);
  p[1] = kiln_pack(s[2 * kk][2], s[2 * kk][3]);
  p[2] = kiln_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  p[3] = kiln_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}}
// The thread's two output rows (row0 and row0 + 8; rows past sq are not stored) divided by their sums;
// out_bh is the output at this batch and head. Two adjacent head-dim columns as one 32-bit store where
// the output's rows are contiguous and even.
KILN_DEV void kiln_store_rows(const float (&o)[D / 8][4], const float (&m)[2], float (&l)[2], long long row0,
                              long long sq, unsigned short* out_bh, long long os, long long od, bool paired, int t) {{
#pragma unroll
  for (int i = 0; i < 2; ++i) {{
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }}
  for (int i = 0; i < 2; ++i) {{
    const long long r = row0 + 8 * i;
    if (r >= sq) continue;
    const bool nan_row = m[i] == -kiln_inf_f32() || l[i] != l[i];
    const float inv = 1.0f / l[i];
    unsigned short* o_row = out_bh + r * os;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {{
      float y[2];
      for (int e = 0; e < 2; ++e) y[e] = nan_row ? (KILN_GUARD ? 0.0f : kiln_nan_f32()) : o[n][2 * i + e] * inv;
      const int col = n * 8 + 2 * t;
      if (paired) {{
        *(unsigned*)(o_row + col) = kiln_pack(y[0], y[1]);
      }} else {{
        o_row[col * od] = {narrow}(y[0]);
        o_row[(col + 1) * od] = {narrow}(y[1]);
      }}
    }}
  }}
}}
)",
                     fmt::arg("guard", spec.guard ? 1 : 0), fmt::arg("masked", spec.mask ? 1 : 0),
                     fmt::arg("raw", !spec.mask && spec.positive_scale ? 1 : 0),
                     fmt::arg("widen", bf16 ? "kiln_bf16_to_f32" : "kiln_f16_to_f32"),
                     fmt::arg("narrow", bf16 ? "kiln_f32_to_bf16" : "kiln_f32_to_f16"));
}

std::string attention_mask_rows(const AttentionSpec& spec) {
  if (!spec.mask) return "";
  return "  const unsigned short* mask_row0 = in3 + b * mb + h * mh + (row0 < sq ? row0 : sq - 1) * ms;\n"
         "  const unsigned short* mask_row1 = in3 + b * mb + h * mh + (row0 + 8 < sq ? row0 + 8 : sq - 1) * ms;\n"
         "  const bool mask_pairs = mk == 1 && ((mb | mh | ms) & 1) == 0 && ((unsigned long long)in3 & 3) == 0;\n";
}

std::string attention_mask_load(const AttentionSpec& spec) {
  if (!spec.mask) return "";
  return "    if (mask_pairs) kiln_mask_words<1>(mask_w, t, keys_here, mask_row0 + key0, mask_row1 + key0, 1);\n"
         "    else kiln_mask_words<2>(mask_w, t, keys_here, mask_row0 + key0 * mk, mask_row1 + key0 * mk, mk);\n";
}

}  // namespace kiln::backend::cuda
