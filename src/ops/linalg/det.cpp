// Det(X [..., M, M]) -> [...]: the determinant of each matrix by LU with partial pivoting, in double
// (a zero pivot makes it 0; a NaN anywhere, NaN).
#include <cmath>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

std::vector<TensorType> infer_det(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  if (!is_float(x.dtype)) ctx.fail("input must be float, is {}", dtype_name(x.dtype));
  if (x.rank() < 2) ctx.fail("input must have rank 2 or more, has {}", x.rank());
  const Dim &m = x.shape[size_t(x.rank() - 2)], &n = x.shape[size_t(x.rank() - 1)];
  if (m.is_static() && n.is_static() && m.value != n.value) ctx.fail("matrices must be square, are {}x{}", m.value, n.value);
  return {TensorType{x.dtype, Shape(x.shape.begin(), x.shape.end() - 2)}};
}

double determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[size_t(i * m + k)]) > std::fabs(a[size_t(pivot * m + k)])) pivot = i;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[size_t(k * m + j)], a[size_t(pivot * m + j)]);
      det = -det;
    }
    const double p = a[size_t(k * m + k)];
    det *= p;
    if (p == 0) continue;  // singular (det is 0, or NaN where an input was NaN)
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[size_t(i * m + k)] / p;
      for (int64_t j = k; j < m; ++j) a[size_t(i * m + j)] -= f * a[size_t(k * m + j)];
    }
  }
  return det;
}

void kernel_det(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  const int64_t m = x.dim(x.rank() - 1);
  if (x.dim(x.rank() - 2) != m) node_fail(node, "matrices must be square, are {}x{}", x.dim(x.rank() - 2), m);
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < out[0].numel(); ++b) {
    for (int64_t i = 0; i < m * m; ++i) a[size_t(i)] = x.as_double(b * m * m + i);
    const double d = determinant(a, m);
    dispatch_float(out[0].dtype(), [&](auto t) { out[0].data<decltype(t)>()[b] = static_cast<decltype(t)>(d); });
  }
}

}  // namespace

void register_det_op(OpRegistry& r) {
  OpDef det;
  det.infer = infer_det;
  det.kernel = kernel_det;
  det.min_inputs = det.max_inputs = 1;
  r.add(OpKind::Det, det);
}

}  // namespace kiln::linalg_ops
