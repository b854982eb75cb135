// LayerNormalization (opset 17): normalises over the dims axis..rank-1 of X,
//   Y = (X - mean) / sqrt(var + epsilon) * Scale + B,
// with optional outputs Mean and InvStdDev of shape X.shape[:axis] + [1]*(rank - axis).
// Scale and B are unidirectionally broadcast to the normalised shape X.shape[axis:].
// Mean/InvStdDev take X's dtype (ONNX Runtime's choice for f32/f64). For f16/bf16 models the executor
// runs the op in f32 and casts every output back, so they come out in X's half type, not float.
// stash_type = 11 (double) makes an f32 node accumulate in double; other values compute in f32.
#include <cmath>
#include <limits>

#include "ops/reduction/f32_kernels.h"
#include "ops/reduction/reduction_common.h"

namespace kiln {
namespace {

constexpr int64_t kStashDouble = 11;  // TensorProto.DOUBLE

void check_param(InferContext& ctx, size_t i, const char* what, const TensorType& x, int64_t axis) {
  const TensorType& p = ctx.in(i);
  if (p.dtype != x.dtype) ctx.fail("{} has dtype {}, X has {}", what, dtype_name(p.dtype), dtype_name(x.dtype));
  int64_t norm_rank = x.rank() - axis;
  if (p.rank() > norm_rank)
    ctx.fail("{} {} does not broadcast to the normalised shape (X {} from axis {})", what, shape_string(p.shape),
             shape_string(x.shape), axis);
  for (int64_t d = 0; d < p.rank(); ++d) {
    const Dim& pd = p.shape[static_cast<size_t>(d)];
    const Dim& xd = x.shape[static_cast<size_t>(x.rank() - p.rank() + d)];
    if (pd.is_static() && xd.is_static() && pd.value != 1 && pd.value != xd.value)
      ctx.fail("{} {} does not broadcast to the normalised shape (X {} from axis {})", what, shape_string(p.shape),
               shape_string(x.shape), axis);
  }
}

std::vector<TensorType> infer_layernorm(InferContext& ctx) {
  const Node& node = ctx.node();
  const TensorType& x = ctx.in(0);
  if (!is_float(x.dtype)) ctx.fail("X must be a float tensor, not {}", dtype_name(x.dtype));
  int64_t axis = normalize_axis(ctx, node.attr_int("axis", -1), x.rank());
  check_param(ctx, 1, "Scale", x, axis);
  if (ctx.has(2)) check_param(ctx, 2, "B", x, axis);
  if (node.outputs.size() > 3) ctx.fail("has {} outputs; at most 3 (Y, Mean, InvStdDev)", node.outputs.size());
  TensorType stat{x.dtype, {}};
  for (int64_t d = 0; d < x.rank(); ++d) stat.shape.push_back(d < axis ? x.shape[static_cast<size_t>(d)] : Dim::fixed(1));
  std::vector<TensorType> types{x, stat, stat};
  types.resize(std::max<size_t>(1, std::min<size_t>(3, node.outputs.size())));
  return types;
}

// `p` laid out over the normalised shape (a copy only when it is actually broadcast).
template <class T>
const T* expand_param(const Tensor& p, const std::vector<int64_t>& norm_dims, int64_t n, std::vector<T>& storage) {
  if (p.numel() == n) return p.data<T>();
  std::vector<int64_t> strides = broadcast_strides(p.shape(), norm_dims);
  storage.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0;
    for (size_t d = norm_dims.size(); d-- > 0;) {
      off += (rest % norm_dims[d]) * strides[d];
      rest /= norm_dims[d];
    }
    storage[static_cast<size_t>(i)] = p.data<T>()[off];
  }
  return storage.data();
}

// Reference (and f64 / stash-double eager): plain loops, accumulation in double.
template <class T>
void layernorm_plain(const T* x, T* y, int64_t rows, int64_t n, const T* scale, const T* bias, double eps,
                     T* mean_out, T* inv_out) {
  parallel_for(rows, std::max<int64_t>(1, 4096 / n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += xr[i];
      double mean = sum / static_cast<double>(n);
      double sq = 0;
      for (int64_t i = 0; i < n; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      double inv = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
      for (int64_t i = 0; i < n; ++i) {
        double v = (xr[i] - mean) * inv * static_cast<double>(scale[i]);
        yr[i] = static_cast<T>(bias ? v + static_cast<double>(bias[i]) : v);
      }
      if (mean_out) mean_out[r] = static_cast<T>(mean);
      if (inv_out) inv_out[r] = static_cast<T>(inv);
    }
  });
}

void layernorm_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                      const KernelContext& ctx) {
  const Tensor& x = *in[0];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  int64_t axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  std::vector<int64_t> norm_dims(x.shape().begin() + axis, x.shape().end());
  int64_t rows = 1, n = 1;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? rows : n) *= x.dim(static_cast<int>(d));
  double eps = node.attr_float("epsilon", 1e-5);
  bool fast = use_fast_f32(ctx, x.dtype()) && node.attr_int("stash_type", 1) != kStashDouble;

  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* mean_out = has_output(node, 1) ? out[1].data<T>() : nullptr;
    T* inv_out = has_output(node, 2) ? out[2].data<T>() : nullptr;
    if (rows == 0) return;
    if (n == 0) {  // statistics of an empty set: 0/0
      for (int64_t r = 0; r < rows; ++r) {
        if (mean_out) mean_out[r] = std::numeric_limits<T>::quiet_NaN();
        if (inv_out) inv_out[r] = std::numeric_limits<T>::quiet_NaN();
      }
      return;
    }
    std::vector<T> scale_store, bias_store;
    const T* scale = expand_param<T>(*in[1], norm_dims, n, scale_store);
    const T* b = bias ? expand_param<T>(*bias, norm_dims, n, bias_store) : nullptr;
    const T* xd = x.data<T>();
    T* yd = out[0].data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (fast) {
        const F32Kernels& k = f32_kernels();
        float feps = static_cast<float>(eps);
        parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t lo, int64_t hi) {
          for (int64_t r = lo; r < hi; ++r) {
            float m, inv;
            k.layernorm_row(xd + r * n, yd + r * n, n, scale, b, feps, &m, &inv);
            if (mean_out) mean_out[r] = m;
            if (inv_out) inv_out[r] = inv;
          }
        });
        return;
      }
    }
    layernorm_plain<T>(xd, yd, rows, n, scale, b, eps, mean_out, inv_out);
  });
}

}  // namespace

void register_layernorm_op(OpRegistry& r) {
  r.add(OpKind::LayerNormalization,
        OpDef{.infer = infer_layernorm, .kernel = layernorm_kernel, .min_inputs = 2, .max_inputs = 3});
}

}  // namespace kiln
