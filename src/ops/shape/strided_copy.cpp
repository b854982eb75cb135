// The copy engine behind Transpose, Slice, Split, Expand and Tile: a strided view of the source is
// written into a contiguous destination, one inner row at a time (memcpy when the row is contiguous),
// or in square tiles when the destination's inner axis is strided in the source (a real transpose).
#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

struct View {
  std::vector<int64_t> dims, strides;
};

// Drops size-1 dims and merges neighbours that are contiguous with each other in the source, so that
// the inner row is as long as possible.
View coalesce(std::span<const int64_t> dims, std::span<const int64_t> strides) {
  View v;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!v.dims.empty() && v.strides.back() == strides[k] * dims[k]) {
      v.dims.back() *= dims[k];
      v.strides.back() = strides[k];
    } else {
      v.dims.push_back(dims[k]);
      v.strides.push_back(strides[k]);
    }
  }
  return v;
}

// Source offset of the first element of destination row `row` (rows run over dims [0, rank-1)).
int64_t row_offset(const View& v, int64_t row, std::vector<int64_t>& index) {
  int64_t off = 0;
  for (size_t k = v.dims.size() - 1; k-- > 0;) {
    index[k] = row % v.dims[k];
    row /= v.dims[k];
    off += index[k] * v.strides[k];
  }
  return off;
}

// q[j] = p[j * s] for j < n.
template <class U>
inline void copy_segment(const U* p, int64_t s, U* q, int64_t n) {
  if (s == 1) std::memcpy(q, p, static_cast<size_t>(n) * sizeof(U));
  else if (s == 0) std::fill(q, q + n, *p);
  else for (int64_t j = 0; j < n; ++j) q[j] = p[j * s];
}

template <class U>
void copy_rows(const View& v, const U* src, U* dst, int64_t begin, int64_t end) {
  size_t rank = v.dims.size();
  int64_t n = v.dims[rank - 1], s = v.strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t off = row_offset(v, begin, index);
  for (int64_t row = begin; row < end; ++row) {
    copy_segment(src + off, s, dst + row * n, n);
    // Advance the odometer over the outer dims.
    for (size_t k = rank - 1; k-- > 0;) {
      off += v.strides[k];
      if (++index[k] < v.dims[k]) break;
      off -= v.strides[k] * v.dims[k];
      index[k] = 0;
    }
  }
}

int64_t numel_of(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

constexpr int64_t kMinElementsPerThread = 16384;

void copy_view(size_t esize, const View& v, const void* src, void* dst) {
  if (v.dims.empty()) {  // a single element
    std::memcpy(dst, src, esize);
    return;
  }
  int64_t inner = v.dims.back();
  int64_t rows = numel_of(v.dims) / inner;
  int64_t min_rows = std::max<int64_t>(1, kMinElementsPerThread / inner);
  int threads = omp_get_max_threads();
  if (threads > 1 && rows < 2 * threads && inner >= 2 * kMinElementsPerThread) {
    // Few long rows (Concat/Split on an outer axis): cut the rows themselves across the threads.
    int64_t chunks = (inner + kMinElementsPerThread - 1) / kMinElementsPerThread;
    dispatch_bytes(esize, [&](auto u) {
      using U = decltype(u);
      parallel_for(rows * chunks, 1, [&](int64_t b, int64_t e) {
        std::vector<int64_t> index(v.dims.size(), 0);
        for (int64_t item = b; item < e; ++item) {
          int64_t row = item / chunks, j0 = (item % chunks) * kMinElementsPerThread;
          int64_t n = std::min(kMinElementsPerThread, inner - j0), s = v.strides.back();
          int64_t off = row_offset(v, row, index) + j0 * s;
          copy_segment(static_cast<const U*>(src) + off, s, static_cast<U*>(dst) + row * inner + j0, n);
        }
      });
    });
    return;
  }
  dispatch_bytes(esize, [&](auto u) {
    using U = decltype(u);
    parallel_for(rows, min_rows, [&](int64_t b, int64_t e) {
      copy_rows<U>(v, static_cast<const U*>(src), static_cast<U*>(dst), b, e);
    });
  });
}

// One block of a transpose: d[i * dq + j] = s[i + j * sl] for i < ni, j < nj.
template <class U>
void transpose_block(const U* s, int64_t sl, U* d, int64_t dq, int64_t ni, int64_t nj) {
  for (int64_t i = 0; i < ni; ++i)
    for (int64_t j = 0; j < nj; ++j) d[i * dq + j] = s[i + j * sl];
}

#if defined(__x86_64__)
// 8x8 in-register transpose of 4-byte elements (any dtype: the shuffles only move bits).
__attribute__((target("avx2"))) inline void transpose_8x8_avx2(const uint32_t* s, int64_t sl, uint32_t* d, int64_t dq) {
  const float* f = reinterpret_cast<const float*>(s);
  __m256 r0 = _mm256_loadu_ps(f), r1 = _mm256_loadu_ps(f + sl), r2 = _mm256_loadu_ps(f + 2 * sl);
  __m256 r3 = _mm256_loadu_ps(f + 3 * sl), r4 = _mm256_loadu_ps(f + 4 * sl), r5 = _mm256_loadu_ps(f + 5 * sl);
  __m256 r6 = _mm256_loadu_ps(f + 6 * sl), r7 = _mm256_loadu_ps(f + 7 * sl);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3);
  __m256 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  float* o = reinterpret_cast<float*>(d);
  _mm256_storeu_ps(o, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(o + dq, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(o + 2 * dq, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(o + 3 * dq, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(o + 4 * dq, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(o + 5 * dq, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(o + 6 * dq, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(o + 7 * dq, _mm256_permute2f128_ps(u3, u7, 0x31));
}

__attribute__((target("avx2"))) void transpose_block_avx2(const uint32_t* s, int64_t sl, uint32_t* d, int64_t dq,
                                                          int64_t ni, int64_t nj) {
  int64_t i8 = ni / 8 * 8, j8 = nj / 8 * 8;
  for (int64_t i = 0; i < i8; i += 8)
    for (int64_t j = 0; j < j8; j += 8) transpose_8x8_avx2(s + i + j * sl, sl, d + i * dq + j, dq);
  transpose_block(s + j8 * sl, sl, d + j8, dq, ni, nj - j8);  // the right edge, all rows
  transpose_block(s + i8, sl, d + i8 * dq, dq, ni - i8, j8);  // the bottom edge
}

bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

// dst (contiguous over v.dims) gets src where the source's unit-stride axis is `q` (not the last):
// each work item moves one tile of the (q, last) plane, with an 8x8 register transpose for 4-byte
// elements where AVX2 exists.
template <class U>
void transpose_tiles(const View& v, size_t q, const U* src, U* dst) {
  constexpr int64_t kTile = sizeof(U) == 4 ? 32 : 16;
  bool avx2 = false;
#if defined(__x86_64__)
  avx2 = sizeof(U) == 4 && has_avx2();
#endif
  size_t rank = v.dims.size(), last = rank - 1;
  std::vector<int64_t> dst_strides(rank);
  int64_t acc = 1;
  for (size_t k = rank; k-- > 0;) {
    dst_strides[k] = acc;
    acc *= v.dims[k];
  }
  int64_t nq = v.dims[q], nl = v.dims[last], sl = v.strides[last], dq = dst_strides[q];
  int64_t tiles_q = (nq + kTile - 1) / kTile, tiles_l = (nl + kTile - 1) / kTile;
  int64_t outer = acc / (nq * nl);
  int64_t work = outer * tiles_q * tiles_l;
  int64_t min_items = std::max<int64_t>(1, kMinElementsPerThread / (kTile * kTile));
  parallel_for(work, min_items, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t tl = w % tiles_l, tq = (w / tiles_l) % tiles_q, o = w / (tiles_l * tiles_q);
      int64_t soff = 0, doff = 0;
      for (size_t k = rank; k-- > 0;) {
        if (k == q || k == last) continue;
        int64_t i = o % v.dims[k];
        o /= v.dims[k];
        soff += i * v.strides[k];
        doff += i * dst_strides[k];
      }
      int64_t i0 = tq * kTile, j0 = tl * kTile;
      int64_t ni = std::min(kTile, nq - i0), nj = std::min(kTile, nl - j0);
      const U* s = src + soff + i0 + j0 * sl;
      U* d = dst + doff + i0 * dq + j0;
#if defined(__x86_64__)
      if constexpr (sizeof(U) == 4) {
        if (avx2) {
          transpose_block_avx2(reinterpret_cast<const uint32_t*>(s), sl, reinterpret_cast<uint32_t*>(d), dq, ni, nj);
          continue;
        }
      }
#endif
      transpose_block(s, sl, d, dq, ni, nj);
    }
  });
}

}  // namespace

void strided_copy(size_t esize, std::span<const int64_t> dims, std::span<const int64_t> src_strides,
                  const void* src, void* dst) {
  if (numel_of(dims) == 0) return;  // zero-size: touch nothing
  copy_view(esize, coalesce(dims, src_strides), src, dst);
}

void transpose_copy(size_t esize, std::span<const int64_t> in_dims, std::span<const int64_t> perm,
                    const void* src, void* dst) {
  if (numel_of(in_dims) == 0) return;
  std::vector<int64_t> in_strides = contiguous_strides({in_dims.begin(), in_dims.end()});
  std::vector<int64_t> dims(perm.size()), strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    dims[k] = in_dims[static_cast<size_t>(perm[k])];
    strides[k] = in_strides[static_cast<size_t>(perm[k])];
  }
  View v = coalesce(dims, strides);
  if (v.dims.size() <= 1 || v.strides.back() == 1) {  // rows stay contiguous: memcpy per row
    copy_view(esize, v, src, dst);
    return;
  }
  size_t q = 0;
  while (q < v.dims.size() && v.strides[q] != 1) ++q;
  KILN_INTERNAL_CHECK(q < v.dims.size(), "transpose_copy: no unit-stride axis");
  dispatch_bytes(esize, [&](auto u) {
    using U = decltype(u);
    transpose_tiles<U>(v, q, static_cast<const U*>(src), static_cast<U*>(dst));
  });
}

}  // namespace kiln::shape_ops
