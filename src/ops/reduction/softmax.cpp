// Softmax and LogSoftmax, opset-13 semantics: one axis (default -1), normalised along it alone.
// Formula as numpy / the ONNX reference: e = exp(x - max), softmax = e / sum(e),
// logsoftmax = (x - max) - log(sum(e)). So a row of all -inf, a row holding +inf (inf - inf) and a
// row holding NaN all give NaN across the row.
#include <cmath>
#include <limits>

#include "ops/reduction/f32_kernels.h"
#include "ops/reduction/reduction_common.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_softmax(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (!is_float(x.dtype)) ctx.fail("input must be a float tensor, not {}", dtype_name(x.dtype));
  normalize_axis(ctx, ctx.node().attr_int("axis", -1), x.rank());
  return {x};
}

// Eager f32. Last axis: one row per task, three vector passes (max; exp + sum; scale).
// Other axes: per (outer, chunk of inner), the same passes over whole rows of the chunk.
template <bool kLog>
void softmax_f32(const float* x, float* y, const AxisSplit& s) {
  const F32Kernels& k = f32_kernels();
  const int64_t n = s.len;
  if (s.inner == 1) {
    parallel_for(s.outer, std::max<int64_t>(1, 16384 / n), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float m = k.row_max(xr, n);
        if constexpr (kLog) {
          float sum = k.row_exp_sum(xr, nullptr, n, m);
          k.row_sub2(xr, yr, n, m, std::log(sum));
        } else {
          float sum = k.row_exp_sum(xr, yr, n, m);
          k.row_scale(yr, n, 1.0f / sum);
        }
      }
    });
    return;
  }
  const int64_t inner = s.inner;
  for_outer_and_chunks(s.outer, inner, n * std::min(inner, kColumnChunk), [&](int64_t o, int64_t j0, int64_t cnt) {
    float m[kColumnChunk], sum[kColumnChunk], block[kColumnChunk];
    const float* xb = x + o * n * inner + j0;
    float* yb = y + o * n * inner + j0;
    std::fill_n(m, cnt, -std::numeric_limits<float>::infinity());
    for (int64_t i = 0; i < n; ++i) k.col_max(m, xb + i * inner, cnt);
    // Sums of 64-row blocks added up: rounding error grows like n/64 + 64 rather than n.
    std::fill_n(sum, cnt, 0.0f);
    for (int64_t i0 = 0; i0 < n; i0 += 64) {
      std::fill_n(block, cnt, 0.0f);
      for (int64_t i = i0; i < std::min(n, i0 + 64); ++i)
        k.col_exp_sum(xb + i * inner, m, kLog ? nullptr : yb + i * inner, block, cnt);
      k.col_add(sum, block, cnt);
    }
    if constexpr (kLog) {
      for (int64_t j = 0; j < cnt; ++j) sum[j] = std::log(sum[j]);
      for (int64_t i = 0; i < n; ++i) k.col_sub2(xb + i * inner, m, sum, yb + i * inner, cnt);
    } else {
      for (int64_t j = 0; j < cnt; ++j) sum[j] = 1.0f / sum[j];
      for (int64_t i = 0; i < n; ++i) k.col_mul(yb + i * inner, sum, cnt);
    }
  });
}

// Reference (and f64 eager): plain loops per column, accumulation in double.
template <bool kLog, class T>
void softmax_plain(const T* x, T* y, const AxisSplit& s) {
  const int64_t n = s.len, inner = s.inner;
  parallel_for(s.outer, 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        const T* xc = x + o * n * inner + j;
        T* yc = y + o * n * inner + j;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < n; ++i) {
          double v = xc[i * inner];
          if (v > m || v != v) m = v;  // NaN sticky, like numpy's max
        }
        double sum = 0;
        for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(xc[i * inner]) - m);
        double log_sum = std::log(sum);
        for (int64_t i = 0; i < n; ++i) {
          double d = static_cast<double>(xc[i * inner]) - m;
          yc[i * inner] = static_cast<T>(kLog ? d - log_sum : std::exp(d) / sum);
        }
      }
  });
}

template <bool kLog>
void softmax_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                    const KernelContext& ctx) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.numel() == 0) return;
  AxisSplit s = split_at_axis(x.shape(), normalize_axis(node, node.attr_int("axis", -1), x.rank()));
  if (use_fast_f32(ctx, x.dtype())) {
    softmax_f32<kLog>(x.data<float>(), y.data<float>(), s);
    return;
  }
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    softmax_plain<kLog, T>(x.data<T>(), y.data<T>(), s);
  });
}

}  // namespace

void register_softmax_ops(OpRegistry& r) {
  r.add(OpKind::Softmax, OpDef{.infer = infer_softmax, .kernel = softmax_kernel<false>, .min_inputs = 1, .max_inputs = 1});
  r.add(OpKind::LogSoftmax, OpDef{.infer = infer_softmax, .kernel = softmax_kernel<true>, .min_inputs = 1, .max_inputs = 1});
}

}  // namespace kiln
