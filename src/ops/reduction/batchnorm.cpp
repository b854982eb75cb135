// BatchNormalization in inference mode (opset 15): per channel c (dim 1 of X = [N, C, D1, ...]),
//   Y = (X - input_mean[c]) / sqrt(input_var[c] + epsilon) * scale[c] + B[c].
// training_mode = 1 (batch statistics, running mean/var outputs) is not supported: a user error.
#include <cmath>

#include "ops/reduction/f32_kernels.h"
#include "ops/reduction/reduction_common.h"

namespace kiln {
namespace {

const char* const kParamNames[] = {"X", "scale", "B", "input_mean", "input_var"};

std::vector<TensorType> infer_batchnorm(InferContext& ctx) {
  const Node& node = ctx.node();
  if (node.attr_int("training_mode", 0) != 0)
    ctx.unsupported("training_mode=1 is not supported (kiln runs BatchNormalization in inference mode only)");
  if (node.has_attr("spatial") && node.attr_int("spatial", 1) == 0)
    ctx.unsupported("spatial=0 (per-activation statistics) is not supported");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i] != kNoValue)
      ctx.unsupported("output {} (running statistics) exists only in training mode, which is not supported", i);
  const TensorType& x = ctx.in(0);
  if (!is_float(x.dtype)) ctx.fail("X must be a float tensor, not {}", dtype_name(x.dtype));
  if (x.rank() < 2) ctx.fail("X must have rank >= 2 ([N, C, ...]), got {}", shape_string(x.shape));
  const Dim& c = x.shape[1];
  for (size_t i = 1; i <= 4; ++i) {
    const TensorType& p = ctx.in(i);
    if (!is_float(p.dtype)) ctx.fail("{} must be a float tensor, not {}", kParamNames[i], dtype_name(p.dtype));
    if (p.rank() != 1 || (p.shape[0].is_static() && c.is_static() && p.shape[0].value != c.value))
      ctx.fail("{} has shape {}; expected [{}] (the channels of X {})", kParamNames[i], shape_string(p.shape),
               dim_string(c), shape_string(x.shape));
  }
  return std::vector<TensorType>(std::max<size_t>(1, node.outputs.size()), x);
}

std::vector<double> param_values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.as_double(i);
  return v;
}

void batchnorm_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                      const KernelContext& ctx) {
  const Tensor& x = *in[0];
  if (x.numel() == 0) return;
  const int64_t n = x.dim(0), channels = x.dim(1), inner = x.numel() / (n * channels);
  const double eps = node.attr_float("epsilon", 1e-5);
  std::vector<double> scale = param_values(*in[1]), bias = param_values(*in[2]), mean = param_values(*in[3]),
                      var = param_values(*in[4]);

  if (use_fast_f32(ctx, x.dtype())) {
    // Per channel: y = (x - mean) * a + B with a = scale / sqrt(var + eps) folded in double.
    std::vector<float> m(static_cast<size_t>(channels)), a(m.size()), b(m.size());
    for (size_t c = 0; c < m.size(); ++c) {
      m[c] = static_cast<float>(mean[c]);
      a[c] = static_cast<float>(scale[c] / std::sqrt(var[c] + eps));
      b[c] = static_cast<float>(bias[c]);
    }
    const float* xd = x.data<float>();
    float* yd = out[0].data<float>();
    const F32Kernels& k = f32_kernels();
    parallel_for(n * channels, std::max<int64_t>(1, 32768 / inner), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        size_t c = static_cast<size_t>(p % channels);
        if (inner == 1) yd[p] = (xd[p] - m[c]) * a[c] + b[c];
        else k.row_affine(xd + p * inner, yd + p * inner, inner, m[c], a[c], b[c]);
      }
    });
    return;
  }
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = out[0].data<T>();
    parallel_for(n * channels, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        size_t c = static_cast<size_t>(p % channels);
        double sd = std::sqrt(var[c] + eps);
        for (int64_t i = p * inner; i < (p + 1) * inner; ++i)
          yd[i] = static_cast<T>((static_cast<double>(xd[i]) - mean[c]) / sd * scale[c] + bias[c]);
      }
    });
  });
}

}  // namespace

void register_batchnorm_op(OpRegistry& r) {
  r.add(OpKind::BatchNormalization,
        OpDef{.infer = infer_batchnorm, .kernel = batchnorm_kernel, .min_inputs = 5, .max_inputs = 5});
}

}  // namespace kiln
