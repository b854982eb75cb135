// The CUDA C++ text of DeviceOps' kernels: one NVRTC program. Conventions as in the generated kernels
// (codegen/cuda): 64-bit indexing, grid-stride loops over the output's flat index (consecutive threads
// write consecutive elements), NaN-propagating max, no fast-math intrinsics, no headers.
// The copy kernels move words W of 1, 2, 4, 8 or 16 bytes (the host picks the widest that the sizes and
// pointers allow), so they never look at the dtype. Parameter structs are __grid_constant__: indexed
// with a run-time index they are read in place from the parameter bank, not copied per thread.
// bf16 and f16 are 2-byte structs of their bits (no cuda_fp16.h / cuda_bf16.h: the program stays
// header-free), widened to fp32 to compare or add, and narrowed with round-to-nearest-even.
#include "backend/cuda/device_ops.h"

#include <string>

#include "codegen/cuda/scalar_cuda.h"

namespace kiln::backend::cuda::detail {

std::string_view device_ops_source() {
  static const std::string text = std::string(codegen::cuda::cuda_grid_prologue()) + R"(
#define KILN_DEV __device__ __forceinline__
#define KILN_MAX_PIECES 32

typedef unsigned char kiln_w1;
typedef unsigned short kiln_w2;
typedef unsigned int kiln_w4;
typedef unsigned long long kiln_w8;
typedef uint4 kiln_w16;

// The error record (4 long longs): code (0: none, 1: gather index out of range), the caller's site,
// the offending index and the axis size. The first error wins; the flag is read before the atomic so
// that a tensor full of bad indices does not serialise on it.
KILN_DEV void kiln_report(long long* err, long long code, long long site, long long value, long long bound) {
  volatile long long* v = err;
  if (v[0] != 0) return;
  unsigned long long* word = reinterpret_cast<unsigned long long*>(err);
  if (atomicCAS(word, 0ull, (unsigned long long)code) == 0ull) {
    err[1] = site;
    err[2] = value;
    err[3] = bound;
  }
}

KILN_DEV long long kiln_first_index() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
KILN_DEV long long kiln_grid_stride() { return (long long)gridDim.x * blockDim.x; }

// ---- Gather: out[o, k, j] = data[o, indices[k], j]; a bad index writes zeros and reports.
template <class W, class I>
KILN_DEV void kiln_gather(const W* data, const I* indices, W* out, long long outer, long long axis_dim,
                          long long count, long long inner, long long* err, long long site) {
  const long long n = outer * count * inner;
  for (long long i = kiln_first_index(); i < n; i += kiln_grid_stride()) {
    const long long j = i % inner;
    const long long r = i / inner;
    const long long k = r % count;
    const long long o = r / count;
    const long long raw = (long long)indices[k];
    const long long v = raw < 0 ? raw + axis_dim : raw;
    if (v < 0 || v >= axis_dim) {
      out[i] = W{};
      kiln_report(err, 1, site, raw, axis_dim);
      continue;
    }
    out[i] = data[(o * axis_dim + v) * inner + j];
  }
}

#define KILN_GATHER(I, IN, W)                                                                             \
  extern "C" __global__ void kiln_gather_##IN##_##W(const W* data, const I* indices, W* out,             \
      long long outer, long long axis_dim, long long count, long long inner, long long* err,             \
      long long site) {                                                                                   \
    kiln_grid_prologue();                                                                                 \
    kiln_gather<W, I>(data, indices, out, outer, axis_dim, count, inner, err, site);                     \
  }

// ---- Concat / Split: pieces [outer, len_k] against one big tensor [outer, big_row]. A launch covers
// the pieces in `p` (at most 32, none empty); piece k sits at columns [column_k, column_k + len_k) of
// the big row and at [prefix_k, prefix_k+1) of this launch's row.
struct KilnPieces {
  unsigned long long ptr[KILN_MAX_PIECES];
  long long len[KILN_MAX_PIECES];
  long long column[KILN_MAX_PIECES];
  long long prefix[KILN_MAX_PIECES + 1];
  int count;
};

// The piece holding launch column c: the last k with prefix[k] <= c.
KILN_DEV int kiln_piece(const KilnPieces& p, long long c) {
  int lo = 0, hi = p.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (p.prefix[mid] <= c) lo = mid; else hi = mid - 1;
  }
  return lo;
}

template <class W, bool kToBig>
KILN_DEV void kiln_pieces_copy(const KilnPieces& p, unsigned long long big, long long outer, long long big_row) {
  const long long row = p.prefix[p.count];
  const long long n = outer * row;
  for (long long i = kiln_first_index(); i < n; i += kiln_grid_stride()) {
    const long long r = i / row;
    const long long c = i % row;
    const int k = kiln_piece(p, c);
    const long long cc = c - p.prefix[k];
    W* big_at = reinterpret_cast<W*>(big) + r * big_row + p.column[k] + cc;
    W* piece_at = reinterpret_cast<W*>(p.ptr[k]) + r * p.len[k] + cc;
    if (kToBig) *big_at = *piece_at; else *piece_at = *big_at;
  }
}

#define KILN_PIECES(W)                                                                                    \
  extern "C" __global__ void kiln_concat_##W(const __grid_constant__ KilnPieces p, unsigned long long out, \
                                             long long outer, long long out_row) {                        \
    kiln_grid_prologue();                                                                                 \
    kiln_pieces_copy<W, true>(p, out, outer, out_row);                                                    \
  }                                                                                                       \
  extern "C" __global__ void kiln_split_##W(const __grid_constant__ KilnPieces p, unsigned long long in,   \
                                            long long outer, long long in_row) {                          \
    kiln_grid_prologue();                                                                                 \
    kiln_pieces_copy<W, false>(p, in, outer, in_row);                                                     \
  }

// ---- Strided copy: out[i] = in[sum_d idx_d(i) * stride_d] over out's shape (row-major), `in` already
// at the view's offset; strides may be 0 or negative.
struct KilnStrided {
  long long shape[8];
  long long stride[8];
  int rank;
};

template <class W>
KILN_DEV void kiln_strided(const W* in, W* out, const KilnStrided& s, long long n) {
  for (long long i = kiln_first_index(); i < n; i += kiln_grid_stride()) {
    long long rest = i, offset = 0;
#pragma unroll
    for (int d = 7; d >= 0; --d) {
      if (d < s.rank) {
        offset += (rest % s.shape[d]) * s.stride[d];
        rest /= s.shape[d];
      }
    }
    out[i] = in[offset];
  }
}

#define KILN_STRIDED(W)                                                                                   \
  extern "C" __global__ void kiln_strided_copy_##W(const W* in, W* out, const __grid_constant__ KilnStrided s, \
                                                   long long n) {                                          \
    kiln_grid_prologue();                                                                                 \
    kiln_strided<W>(in, out, s, n);                                                                       \
  }

KILN_GATHER(int, i32, kiln_w1) KILN_GATHER(int, i32, kiln_w2) KILN_GATHER(int, i32, kiln_w4)
KILN_GATHER(int, i32, kiln_w8) KILN_GATHER(int, i32, kiln_w16)
KILN_GATHER(long long, i64, kiln_w1) KILN_GATHER(long long, i64, kiln_w2) KILN_GATHER(long long, i64, kiln_w4)
KILN_GATHER(long long, i64, kiln_w8) KILN_GATHER(long long, i64, kiln_w16)
KILN_PIECES(kiln_w1) KILN_PIECES(kiln_w2) KILN_PIECES(kiln_w4) KILN_PIECES(kiln_w8) KILN_PIECES(kiln_w16)
KILN_STRIDED(kiln_w1) KILN_STRIDED(kiln_w2) KILN_STRIDED(kiln_w4) KILN_STRIDED(kiln_w8) KILN_STRIDED(kiln_w16)

// ---- Half types: distinct structs so that the templates below tell them apart.
struct kiln_bf16 { unsigned short bits; };
struct kiln_f16 { unsigned short bits; };

// Widening is exact (subnormals, Inf and NaN included): bf16 is the top half of an f32.
KILN_DEV float kiln_value(float x) { return x; }
KILN_DEV double kiln_value(double x) { return x; }
KILN_DEV float kiln_value(kiln_bf16 x) { return __uint_as_float((unsigned)x.bits << 16); }
KILN_DEV float kiln_value(kiln_f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}

// f32 to bf16, round to nearest even; NaN stays a (quiet) NaN, overflow gives Inf. cvt.rn.bf16.f32
// needs sm_80; older devices take the same rounding in integer arithmetic.
KILN_DEV kiln_bf16 kiln_to_bf16(float f) {
  kiln_bf16 r;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
  const unsigned u = __float_as_uint(f);
  r.bits = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u)
                                           : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
  return r;
}

// Narrowing a double with one rounding: f16 directly; bf16 through f32 rounded to odd (a sticky last
// bit), after which rounding to nearest even gives the correctly rounded bf16 (f32 has >= 2 more bits).
KILN_DEV float kiln_round(double d, float) { return (float)d; }
KILN_DEV double kiln_round(double d, double) { return d; }
KILN_DEV kiln_f16 kiln_round(double d, kiln_f16) {
  kiln_f16 r;
  asm("cvt.rn.f16.f64 %0, %1;" : "=h"(r.bits) : "d"(d));
  return r;
}
KILN_DEV kiln_bf16 kiln_round(double d, kiln_bf16) {
  float f;
  asm("cvt.rz.f32.f64 %0, %1;" : "=f"(f) : "d"(d));
  if ((double)f != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return kiln_to_bf16(f);
}

// ---- MaxPool 2-D, NCHW. Taps on padding are skipped; a window with no tap inside gives -inf (as the CPU
// kernel). A NaN tap is taken and then kept (v > NaN is false), so any NaN in the window gives NaN.
// Taps are compared as values (fp32 for the half types) and the winning input itself is stored, so the
// result is bit-identical to it.
struct KilnPool2d {
  long long planes, in_h, in_w, out_h, out_w;
  long long kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
};

KILN_DEV float kiln_neg_inf(float) { return __int_as_float(0xff800000); }
KILN_DEV double kiln_neg_inf(double) { return __longlong_as_double(0xfff0000000000000LL); }
KILN_DEV float kiln_nan(float) { return __int_as_float(0x7fc00000); }
KILN_DEV double kiln_nan(double) { return __longlong_as_double(0x7ff8000000000000LL); }
KILN_DEV kiln_bf16 kiln_neg_inf(kiln_bf16) { return kiln_bf16{0xff80}; }
KILN_DEV kiln_f16 kiln_neg_inf(kiln_f16) { return kiln_f16{0xfc00}; }
KILN_DEV kiln_bf16 kiln_nan(kiln_bf16) { return kiln_bf16{0x7fc0}; }
KILN_DEV kiln_f16 kiln_nan(kiln_f16) { return kiln_f16{0x7e00}; }

// I: the index type of the loop and its divisions, unsigned where they fit (64-bit divisions are slow).
template <class T, class I>
KILN_DEV void kiln_max_pool2d_loop(const T* in, T* out, const KilnPool2d& g) {
  const I n = (I)(g.planes * g.out_h * g.out_w), out_w = (I)g.out_w, out_h = (I)g.out_h;
  for (I i = (I)kiln_first_index(); i < n; i += (I)kiln_grid_stride()) {
    const I ow = i % out_w;
    const I r = i / out_w;
    const I oh = r % out_h;
    const long long plane = r / out_h;
    const T* x = in + plane * g.in_h * g.in_w;
    const long long h0 = oh * g.stride_h - g.pad_top, w0 = ow * g.stride_w - g.pad_left;
    T best = kiln_neg_inf(T{});
    auto acc = kiln_value(best);
    for (long long kh = 0; kh < g.kernel_h; ++kh) {
      const long long ih = h0 + kh * g.dilation_h;
      if (ih < 0 || ih >= g.in_h) continue;
      for (long long kw = 0; kw < g.kernel_w; ++kw) {
        const long long iw = w0 + kw * g.dilation_w;
        if (iw < 0 || iw >= g.in_w) continue;
        const T v = x[ih * g.in_w + iw];
        const auto f = kiln_value(v);
        if (f > acc || f != f) {
          acc = f;
          best = v;
        }
      }
    }
    out[i] = best;
  }
}

template <class T>
KILN_DEV void kiln_max_pool2d(const T* in, T* out, const KilnPool2d& g) {
  if (g.planes * g.out_h * g.out_w + kiln_grid_stride() < 0x7fffffffLL) kiln_max_pool2d_loop<T, unsigned>(in, out, g);
  else kiln_max_pool2d_loop<T, long long>(in, out, g);
}

// ---- GlobalAveragePool: the mean of each plane, summed in double for f32 and f64 (as the CPU kernel)
// and in fp32 for bf16 and f16 (fp32 keeps 13 to 16 more bits than their inputs), divided in double
// and rounded once to the output type. An empty plane gives NaN. Warp-per-plane for small planes,
// block-per-plane for large ones; the order of the adds is fixed by the launch, so results are
// reproducible.
template <class T> struct KilnSum { typedef double type; };
template <> struct KilnSum<kiln_bf16> { typedef float type; };
template <> struct KilnSum<kiln_f16> { typedef float type; };

template <class S>
KILN_DEV S kiln_warp_sum(S s) {
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  return s;
}

template <class T, class S>
KILN_DEV T kiln_mean(S sum, long long spatial) {
  return spatial > 0 ? kiln_round(__ddiv_rn((double)sum, (double)spatial), T{}) : kiln_nan(T{});
}

template <class T>
KILN_DEV void kiln_gap_warp(const T* in, T* out, long long planes, long long spatial) {
  typedef typename KilnSum<T>::type S;
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); p < planes; p += warps) {
    const T* x = in + p * spatial;
    S s = 0;
    for (long long j = lane; j < spatial; j += 32) s += (S)kiln_value(x[j]);
    s = kiln_warp_sum(s);
    if (lane == 0) out[p] = kiln_mean<T>(s, spatial);
  }
}

template <class T>
KILN_DEV void kiln_gap_block(const T* in, T* out, long long planes, long long spatial) {
  typedef typename KilnSum<T>::type S;
  __shared__ S partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (long long p = blockIdx.x; p < planes; p += gridDim.x) {
    const T* x = in + p * spatial;
    S s = 0;
    for (long long j = threadIdx.x; j < spatial; j += blockDim.x) s += (S)kiln_value(x[j]);
    s = kiln_warp_sum(s);
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    if (warp == 0) {
      s = kiln_warp_sum(lane < warps ? partial[lane] : S(0));
      if (lane == 0) out[p] = kiln_mean<T>(s, spatial);
    }
    __syncthreads();  // partial is rewritten for the next plane
  }
}

#define KILN_POOL(T, TN)                                                                                  \
  extern "C" __global__ void kiln_max_pool2d_##TN(const T* in, T* out, const __grid_constant__ KilnPool2d g) { \
    kiln_grid_prologue();                                                                                 \
    kiln_max_pool2d<T>(in, out, g);                                                                       \
  }                                                                                                       \
  extern "C" __global__ void kiln_gap_warp_##TN(const T* in, T* out, long long planes, long long spatial) { \
    kiln_grid_prologue();                                                                                 \
    kiln_gap_warp<T>(in, out, planes, spatial);                                                           \
  }                                                                                                       \
  extern "C" __global__ void kiln_gap_block_##TN(const T* in, T* out, long long planes, long long spatial) { \
    kiln_grid_prologue();                                                                                 \
    kiln_gap_block<T>(in, out, planes, spatial);                                                          \
  }

KILN_POOL(float, f32)
KILN_POOL(double, f64)
KILN_POOL(kiln_bf16, bf16)
KILN_POOL(kiln_f16, f16)

// ---- im2col, NCHW: cols [n, column_rows, column_pixels] (at least c * kernel_h * kernel_w rows and
// out_h * out_w pixels; the rest +0). Row r of image b is (ci, ki, kj) with r = (ci * kernel_h + ki) *
// kernel_w + kj. A block takes one input plane (b, ci) (blockIdx.x; the last of each image writes its
// padding rows), a group of its taps (blockIdx.z) and a chunk of the pixels (blockIdx.y); its threads
// write consecutive pixels of each tap's row (coalesced; the plane's reads hit L1), stepping (oh, ow)
// without a division. Counts are 32-bit (the host checks that rows and pixels are under 2^31): a 64-bit
// division an element made this memory-bound kernel 5-10x slower. Taps on padding give +0; values are
// copied bitwise.
struct KilnIm2col {
  long long n, c, in_h, in_w, out_h, out_w;
  long long kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  long long column_rows, column_pixels;
};

template <class T>
KILN_DEV void kiln_im2col(const T* in, T* cols, const KilnIm2col& g) {
  const unsigned taps = (unsigned)(g.kernel_h * g.kernel_w), kernel_w = (unsigned)g.kernel_w;
  const unsigned c = (unsigned)g.c, rows = c * taps, column_rows = (unsigned)g.column_rows;
  const unsigned planes = c + (column_rows > rows ? 1u : 0u);  // per image, with the padding rows' block
  const unsigned pixels = (unsigned)(g.out_h * g.out_w), padded = (unsigned)g.column_pixels;
  const unsigned out_w = g.out_w > 0 ? (unsigned)g.out_w : 1u;  // no pixels: every column is padding
  const unsigned chunk = (padded + gridDim.y - 1) / gridDim.y;
  const unsigned begin = blockIdx.y * chunk + threadIdx.x, end = min(padded, blockIdx.y * chunk + chunk);
  const unsigned step_h = blockDim.x / out_w, step_w = blockDim.x % out_w;
  const unsigned oh0 = begin / out_w, ow0 = begin - oh0 * out_w;
  const unsigned group = (taps + gridDim.z - 1) / gridDim.z;
  const unsigned tap_begin = blockIdx.z * group, tap_end = min(taps, tap_begin + group);
  for (unsigned q = blockIdx.x; q < (unsigned)g.n * planes; q += gridDim.x) {
    const unsigned b = q / planes, ci = q - b * planes;
    T* image = cols + (long long)b * column_rows * padded;
    if (ci == c) {  // the padding rows, by the taps' first group
      if (blockIdx.z != 0) continue;
      for (unsigned row = rows; row < column_rows; ++row)
        for (unsigned p = begin; p < end; p += blockDim.x) image[(long long)row * padded + p] = T{};
      continue;
    }
    const T* plane = in + ((long long)b * c + ci) * g.in_h * g.in_w;
    for (unsigned tap = tap_begin; tap < tap_end; ++tap) {
      const unsigned ki = tap / kernel_w, kj = tap - ki * kernel_w;
      const long long ih0 = ki * g.dilation_h - g.pad_top, iw0 = kj * g.dilation_w - g.pad_left;
      T* out = image + (long long)(ci * taps + tap) * padded;
      unsigned oh = oh0, ow = ow0;
      for (unsigned p = begin; p < end; p += blockDim.x) {
        T v = T{};
        if (p < pixels) {
          const long long ih = ih0 + (long long)oh * g.stride_h, iw = iw0 + (long long)ow * g.stride_w;
          if (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w) v = plane[ih * g.in_w + iw];
        }
        out[p] = v;
        ow += step_w;
        oh += step_h;
        if (ow >= out_w) {
          ow -= out_w;
          ++oh;
        }
      }
    }
  }
}

#define KILN_IM2COL(T, TN)                                                                                \
  extern "C" __global__ void kiln_im2col_##TN(const T* in, T* cols, const __grid_constant__ KilnIm2col g) { \
    kiln_grid_prologue();                                                                                 \
    kiln_im2col<T>(in, cols, g);                                                                          \
  }

KILN_IM2COL(float, f32)
KILN_IM2COL(double, f64)
KILN_IM2COL(kiln_bf16, bf16)
KILN_IM2COL(kiln_f16, f16)
)";
  return text;
}

}  // namespace kiln::backend::cuda::detail
