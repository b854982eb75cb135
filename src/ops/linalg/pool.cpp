// MaxPool, AveragePool and GlobalAveragePool. Eager f32 pooling goes through oneDNN when its padding
// semantics match; the plain loops (fp64 reference, other dtypes, MaxPool's Indices) work on a D,H,W
// view of 1 to 3 spatial dims. MaxPool propagates NaN (numpy's max), ignoring padded positions.
#include <bit>
#include <cmath>
#include <limits>

#include "kernels/onednn/onednn.h"
#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

// oneDNN's max pooling does not propagate NaN; when the input has one, the plain loop runs instead.
__attribute__((target_clones("avx512f", "avx2", "default")))
bool contains_nan(const float* x, int64_t n) {
  int any = 0;
  for (int64_t i = 0; i < n; ++i) any |= x[i] != x[i];
  return any != 0;
}

bool pool_dtype_ok(OpKind op, DType t) {
  if (is_float(t)) return true;
  return op == OpKind::MaxPool && (t == DType::i8 || t == DType::u8);
}

size_t check_pool_input(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (!pool_dtype_ok(ctx.node().op, x.dtype)) ctx.fail("dtype {} is not supported", dtype_name(x.dtype));
  if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial..), got {}", type_string(x));
  size_t nsp = static_cast<size_t>(x.rank() - 2);
  if (nsp > kMaxSpatial) ctx.fail("{} spatial dims are not supported (at most {})", nsp, kMaxSpatial);
  return nsp;
}

std::vector<TensorType> infer_pool(InferContext& ctx) {
  size_t nsp = check_pool_input(ctx);
  const Node& node = ctx.node();
  const TensorType& x = ctx.in(0);
  WindowAttrs wa = read_window_attrs(node, nsp, {});
  if (node.op == OpKind::MaxPool) {
    int64_t so = node.attr_int("storage_order", 0);
    if (so != 0 && so != 1) ctx.fail("storage_order must be 0 or 1, got {}", so);
  } else {
    int64_t cip = node.attr_int("count_include_pad", 0);
    if (cip != 0 && cip != 1) ctx.fail("count_include_pad must be 0 or 1, got {}", cip);
  }
  Shape out{x.shape[0], x.shape[1]};
  Shape sp = window_output_spatial(ctx, wa, Shape(x.shape.begin() + 2, x.shape.end()));
  out.insert(out.end(), sp.begin(), sp.end());
  return {TensorType{x.dtype, out}, TensorType{DType::i64, out}};
}

// Per axis, for every output index: the valid tap range and (AveragePool with count_include_pad)
// the number of taps inside the padded extent.
struct AxisTaps {
  std::vector<int64_t> k0, k1, padded_count;
};

AxisTaps axis_taps(const Spatial3& g, int a, int64_t pad_end) {
  AxisTaps t;
  for (int64_t o = 0; o < g.out[a]; ++o) {
    int64_t k0, k1, p0, p1;
    valid_taps(o, g.in[a], g.kernel[a], g.stride[a], g.dilation[a], g.pad_begin[a], k0, k1);
    valid_taps(o, g.in[a] + g.pad_begin[a] + pad_end, g.kernel[a], g.stride[a], g.dilation[a], 0, p0, p1);
    t.k0.push_back(k0);
    t.k1.push_back(k1);
    t.padded_count.push_back(p1 - p0);
  }
  return t;
}

struct PoolPlan {
  Spatial3 g;
  std::vector<int64_t> pad_end;  // padded like g (3 entries)
  int64_t planes = 0;            // N * C
};

// a if take else b, through a bit mask: the compiler keeps a branch for `take ? a : b` stores, and on
// random data that branch mispredicts half the time.
template <class T>
inline T select(bool take, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint8_t>>;
  static_assert(sizeof(T) == sizeof(U));
  U m = static_cast<U>(U{0} - static_cast<U>(take));
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & static_cast<U>(~m))));
}

// The plain loops walk one output row at a time: for each (kd, kh) tap pair valid for the row and each
// kw, a contiguous range of outputs reads input elements a fixed stride apart. The inner loops have
// no branches on the data, so they vectorise; taps on padding are never visited.

// Output range [ow0, ow1) whose tap at input offset ow*stride + shift lies inside [0, in).
inline void tap_range(int64_t shift, int64_t stride, int64_t in, int64_t out, int64_t& ow0, int64_t& ow1) {
  ow0 = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  ow1 = in - 1 - shift < 0 ? 0 : std::min(out, (in - 1 - shift) / stride + 1);
  ow0 = std::min(ow0, out);
  if (ow1 < ow0) ow1 = ow0;
}

// Calls f(input row pointer, kd, kh) for every (kd, kh) tap pair of output row (od, oh) that lies inside
// the input.
template <class T, class F>
void for_each_row_tap(const Spatial3& g, const AxisTaps* t, const T* xp, int64_t od, int64_t oh, F&& f) {
  int64_t d0 = od * g.stride[0] - g.pad_begin[0], h0 = oh * g.stride[1] - g.pad_begin[1];
  for (int64_t kd = t[0].k0[od]; kd < t[0].k1[od]; ++kd)
    for (int64_t kh = t[1].k0[oh]; kh < t[1].k1[oh]; ++kh) {
      int64_t id = d0 + kd * g.dilation[0], ih = h0 + kh * g.dilation[1];
      f(xp + (id * g.in[1] + ih) * g.in[2], id * g.in[1] + ih);
    }
}

template <class T>
void max_pool_plain(const PoolPlan& p, const T* x, T* y, int64_t* indices, bool column_major) {
  const Spatial3& g = p.g;
  AxisTaps t[3] = {axis_taps(g, 0, p.pad_end[0]), axis_taps(g, 1, p.pad_end[1]), axis_taps(g, 2, p.pad_end[2])};
  const int64_t in_sz = g.in_size(), out_sz = g.out_size(), OW = g.out[2], IW = g.in[2];
  const int64_t sw = g.stride[2], dw = g.dilation[2], pw = g.pad_begin[2];
  const T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
  parallel_for(p.planes, 1, [&](int64_t b, int64_t e) {
    std::vector<int64_t> at(static_cast<size_t>(indices ? OW : 0));
    for (int64_t plane = b; plane < e; ++plane) {
      const T* xp = x + plane * in_sz;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          int64_t o_row = (od * g.out[1] + oh) * OW;
          T* acc = y + plane * out_sz + o_row;
          std::fill_n(acc, OW, lowest);
          std::fill(at.begin(), at.end(), int64_t{-1});
          for_each_row_tap<T>(g, t, xp, od, oh, [&](const T* row, int64_t row_index) {
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              int64_t shift = kw * dw - pw, ow0, ow1;
              tap_range(shift, sw, IW, OW, ow0, ow1);
              if (!indices) {
                for (int64_t ow = ow0; ow < ow1; ++ow) {
                  T v = row[ow * sw + shift], cur = acc[ow];
                  bool take = v > cur;
                  if constexpr (std::is_floating_point_v<T>) take = take | (v != v);  // NaN sticks once taken
                  acc[ow] = select(take, v, cur);
                }
                continue;
              }
              // First maximum wins (row-major window order).
              const int64_t base = row_index * IW + shift, step = sw;
              int64_t* __restrict ai = at.data();
              for (int64_t ow = ow0; ow < ow1; ++ow) {
                T v = row[ow * step + shift], cur = acc[ow];
                bool take = (ai[ow] < 0) | (v > cur);
                if constexpr (std::is_floating_point_v<T>) take = take | ((v != v) & (cur == cur));
                acc[ow] = select(take, v, cur);
                ai[ow] = select(take, base + ow * step, ai[ow]);
              }
            }
          });
          if (!indices) continue;
          int64_t* ip = indices + plane * out_sz + o_row;
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t idx = at[ow];
            if (column_major && idx >= 0) {  // spatial index with the first spatial axis fastest
              int64_t w = idx % IW, h = idx / IW % g.in[1], d = idx / (IW * g.in[1]);
              idx = d + g.in[0] * (h + g.in[1] * w);
            }
            ip[ow] = idx < 0 ? -1 : plane * in_sz + idx;
          }
        }
    }
  });
}

template <class T>
void avg_pool_plain(const PoolPlan& p, const T* x, T* y, bool count_include_pad) {
  const Spatial3& g = p.g;
  AxisTaps t[3] = {axis_taps(g, 0, p.pad_end[0]), axis_taps(g, 1, p.pad_end[1]), axis_taps(g, 2, p.pad_end[2])};
  const int64_t in_sz = g.in_size(), out_sz = g.out_size(), OW = g.out[2], IW = g.in[2];
  const int64_t sw = g.stride[2], dw = g.dilation[2], pw = g.pad_begin[2];
  using A = acc_t<T>;
  parallel_for(p.planes, 1, [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(OW));
    for (int64_t plane = b; plane < e; ++plane) {
      const T* xp = x + plane * in_sz;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          std::fill(acc.begin(), acc.end(), A{0});
          A* a = acc.data();
          for_each_row_tap<T>(g, t, xp, od, oh, [&](const T* row, int64_t) {
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              int64_t shift = kw * dw - pw, ow0, ow1;
              tap_range(shift, sw, IW, OW, ow0, ow1);
              for (int64_t ow = ow0; ow < ow1; ++ow) a[ow] += static_cast<A>(row[ow * sw + shift]);
            }
          });
          int64_t rows = count_include_pad ? t[0].padded_count[od] * t[1].padded_count[oh]
                                           : (t[0].k1[od] - t[0].k0[od]) * (t[1].k1[oh] - t[1].k0[oh]);
          T* yr = y + plane * out_sz + (od * g.out[1] + oh) * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t count = rows * (count_include_pad ? t[2].padded_count[ow] : t[2].k1[ow] - t[2].k0[ow]);
            yr[ow] = count > 0 ? static_cast<T>(acc[ow] / static_cast<A>(count)) : std::numeric_limits<T>::quiet_NaN();
          }
        }
    }
  });
}

void pool_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                 const KernelContext& kctx) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  bool is_max = node.op == OpKind::MaxPool;
  Tensor* indices = is_max && out.size() > 1 && node.outputs[1] != kNoValue ? &out[1] : nullptr;
  size_t nsp = static_cast<size_t>(x.rank() - 2);
  WindowAttrs wa = read_window_attrs(node, nsp, {});
  std::vector<int64_t> pb(nsp), pe(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    AxisGeometry ag = window_axis(node, wa, i, x.dim(static_cast<int>(2 + i)));
    pb[i] = ag.pad_begin;
    pe[i] = ag.pad_end;
  }
  if (y.numel() == 0) return;
  bool include_pad = !is_max && node.attr_int("count_include_pad", 0) != 0;
  std::vector<int64_t> in_sp = spatial_dims(x.shape()), out_sp = spatial_dims(y.shape());

  if (x.dtype() == DType::f32 && !kctx.reference && !indices && !(is_max && contains_nan(x.data<float>(), x.numel()))) {
    // oneDNN needs pad_end to cover the last window exactly (ceil_mode may extend it). With
    // count_include_pad that extension would enter the divisor, which ONNX does not count.
    bool extended = false;
    std::vector<int64_t> onednn_pe(nsp);
    for (size_t i = 0; i < nsp; ++i) {
      int64_t extent = (wa.kernel[i] - 1) * wa.dilations[i] + 1;
      onednn_pe[i] = (out_sp[i] - 1) * wa.strides[i] + extent - in_sp[i] - pb[i];
      extended |= onednn_pe[i] != pe[i];
    }
    if (!(include_pad && extended)) {
      onednn::PoolKind kind = is_max ? onednn::PoolKind::max
                              : include_pad ? onednn::PoolKind::avg_include_pad
                                            : onednn::PoolKind::avg_exclude_pad;
      onednn::PoolDesc d{kind, x.shape(), y.shape(), wa.kernel, wa.strides, wa.dilations, pb, onednn_pe};
      if (onednn::pool_f32(d, x.data<float>(), y.data<float>())) return;
    }
  }

  PoolPlan p;
  p.g = make_spatial3(in_sp, out_sp, wa, pb);
  p.pad_end.assign(kMaxSpatial - nsp, 0);
  p.pad_end.insert(p.pad_end.end(), pe.begin(), pe.end());
  p.planes = x.dim(0) * x.dim(1);
  bool column_major = is_max && node.attr_int("storage_order", 0) == 1;
  if (is_max) {
    dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int8_t> ||
                    std::is_same_v<T, uint8_t>) {
        max_pool_plain<T>(p, x.data<T>(), y.data<T>(), indices ? indices->data<int64_t>() : nullptr, column_major);
      } else {
        node_fail(node, "dtype {} is not supported", dtype_name(x.dtype()));
      }
    });
  } else {
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      avg_pool_plain<T>(p, x.data<T>(), y.data<T>(), include_pad);
    });
  }
}

// ---------------------------------------------------------------- GlobalAveragePool

std::vector<TensorType> infer_global_average_pool(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (!is_float(x.dtype)) ctx.fail("dtype {} is not supported (float types only)", dtype_name(x.dtype));
  if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial..), got {}", type_string(x));
  Shape out{x.shape[0], x.shape[1]};
  for (int i = 2; i < x.rank(); ++i) out.push_back(Dim::fixed(1));
  return {TensorType{x.dtype, out}};
}

void global_average_pool_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                                const KernelContext& kctx) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  int64_t planes = y.numel();
  if (planes == 0) return;
  int64_t size = x.numel() / std::max<int64_t>(1, planes);
  if (x.numel() == 0) size = 0;
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = y.data<T>();
    parallel_for(planes, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, size)), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* xp = xd + p * size;
        double s[4] = {0, 0, 0, 0};  // four chains: the adds do not wait on each other
        int64_t i = 0;
        for (; i + 4 <= size; i += 4)
          for (int j = 0; j < 4; ++j) s[j] += static_cast<double>(xp[i + j]);
        for (; i < size; ++i) s[0] += static_cast<double>(xp[i]);
        double total = (s[0] + s[1]) + (s[2] + s[3]);
        yd[p] = static_cast<T>(size > 0 ? total / static_cast<double>(size) : std::nan(""));
      }
    });
  });
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add(OpKind::MaxPool, OpDef{infer_pool, pool_kernel, false, false, 1, 1});
  r.add(OpKind::AveragePool, OpDef{infer_pool, pool_kernel, false, false, 1, 1});
  r.add(OpKind::GlobalAveragePool, OpDef{infer_global_average_pool, global_average_pool_kernel, false, false, 1, 1});
}

}  // namespace kiln::linalg_ops
