// MatMul (numpy semantics) and Gemm. Eager f32 runs through oneDNN's matmul; batch dims are collapsed
// first so that a constant 2-D weight becomes one large [batch*M, K] x [K, N] product.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/onednn/onednn.h"
#include "ops/linalg/linalg_ops.h"
#include "ops/linalg/plain_gemm.h"

namespace kiln::linalg_ops {

__attribute__((target_clones("avx512f", "avx2", "default")))
void axpy_row(double* __restrict acc, const double* __restrict x, double a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] += a * x[j];
}
__attribute__((target_clones("avx512f", "avx2", "default")))
void axpy_row(float* __restrict acc, const float* __restrict x, float a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] += a * x[j];
}

Shape matmul_shape(InferContext& ctx, const TensorType& a, const TensorType& b) {
  if (a.rank() < 1 || b.rank() < 1) ctx.fail("inputs must have rank >= 1, got {} and {}", type_string(a), type_string(b));
  const Dim& ka = a.shape.back();
  const Dim& kb = b.rank() == 1 ? b.shape[0] : b.shape[b.shape.size() - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("inner dimensions differ: {} x {}", type_string(a), type_string(b));
  Shape a_batch(a.shape.begin(), a.shape.end() - std::min(a.rank(), 2));
  Shape b_batch(b.shape.begin(), b.shape.end() - std::min(b.rank(), 2));
  Shape out = broadcast_shapes(ctx, a_batch, b_batch);
  if (a.rank() >= 2) out.push_back(a.shape[a.shape.size() - 2]);
  if (b.rank() >= 2) out.push_back(b.shape.back());
  if (static_cast<int64_t>(out.size()) > ctx.max_rank())
    ctx.fail("output rank {} exceeds max_rank ({})", out.size(), ctx.max_rank());
  return out;
}

MatmulGeometry matmul_geometry(const Node& node, const Tensor& a, const Tensor& b) {
  MatmulGeometry g;
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  g.M = as[as.size() - 2];
  g.K = as.back();
  g.N = bs.back();
  if (bs[bs.size() - 2] != g.K) node_fail(node, "inner dimensions differ: {} x {}", a.shape_string(), b.shape_string());
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  g.batch = broadcast_dims(node, ab, bb);
  size_t r = g.batch.size();
  g.a_batch.assign(r - ab.size(), 1);
  g.a_batch.insert(g.a_batch.end(), ab.begin(), ab.end());
  g.b_batch.assign(r - bb.size(), 1);
  g.b_batch.insert(g.b_batch.end(), bb.begin(), bb.end());
  for (int64_t d : g.batch) g.batch_count *= d;
  return g;
}

void batch_offsets(const MatmulGeometry& g, int64_t i, int64_t& a_off, int64_t& b_off) {
  a_off = 0;
  b_off = 0;
  int64_t a_stride = g.M * g.K, b_stride = g.K * g.N;
  for (size_t d = g.batch.size(); d-- > 0;) {
    int64_t idx = i % g.batch[d];
    i /= g.batch[d];
    if (g.a_batch[d] != 1) a_off += idx * a_stride;
    if (g.b_batch[d] != 1) b_off += idx * b_stride;
    a_stride *= g.a_batch[d];
    b_stride *= g.b_batch[d];
  }
}

namespace {

bool matmul_dtype_ok(DType t) { return is_float(t) || t == DType::i32 || t == DType::i64; }

// ---------------------------------------------------------------- MatMul

std::vector<TensorType> infer_matmul(InferContext& ctx) {
  const TensorType& a = ctx.in(0);
  const TensorType& b = ctx.in(1);
  if (a.dtype != b.dtype) ctx.fail("inputs have different dtypes: {} and {}", dtype_name(a.dtype), dtype_name(b.dtype));
  if (!matmul_dtype_ok(a.dtype)) ctx.fail("dtype {} is not supported", dtype_name(a.dtype));
  return {TensorType{a.dtype, matmul_shape(ctx, a, b)}};
}

template <class T>
void matmul_plain(const MatmulGeometry& g, const T* a, const T* b, T* c) {
  int64_t rows = g.batch_count * g.M;
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.K * g.N)), [&](int64_t r0, int64_t r1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(g.N));
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bi = r / g.M, i = r % g.M, a_off, b_off;
      batch_offsets(g, bi, a_off, b_off);
      product_row<T>(a + a_off + i * g.K, 1, b + b_off, g.N, 1, g.K, g.N, acc.data());
      T* out = c + r * g.N;
      for (int64_t j = 0; j < g.N; ++j) out[j] = static_cast<T>(acc[j]);
    }
  });
}

// Eager f32 through oneDNN. Batch dims of size 1 are dropped and neighbours with the same broadcast
// pattern merged; without a batch on B the whole batch folds into M.
bool matmul_onednn(const MatmulGeometry& g, const float* a, const float* b, float* c) {
  std::vector<int64_t> cb, ab, bb;
  int last_pattern = -1;
  for (size_t d = 0; d < g.batch.size(); ++d) {
    if (g.batch[d] == 1) continue;
    int pattern = (g.a_batch[d] == 1 ? 1 : 0) | (g.b_batch[d] == 1 ? 2 : 0);
    if (pattern == last_pattern) {
      cb.back() *= g.batch[d];
      ab.back() *= g.a_batch[d];
      bb.back() *= g.b_batch[d];
    } else {
      cb.push_back(g.batch[d]);
      ab.push_back(g.a_batch[d]);
      bb.push_back(g.b_batch[d]);
      last_pattern = pattern;
    }
  }
  bool b_has_batch = false;
  for (int64_t d : bb) b_has_batch |= d != 1;
  onednn::MatmulDesc d;
  if (!b_has_batch) {
    int64_t rows = g.batch_count * g.M;
    d.a_dims = {rows, g.K};
    d.a_strides = {g.K, 1};
    d.b_dims = {g.K, g.N};
    d.b_strides = {g.N, 1};
    d.c_dims = {rows, g.N};
    return onednn::matmul_f32(d, a, b, c);
  }
  if (cb.size() + 2 > 12) {  // beyond oneDNN's rank: one 2-D product per batch entry
    d.a_dims = {g.M, g.K};
    d.a_strides = {g.K, 1};
    d.b_dims = {g.K, g.N};
    d.b_strides = {g.N, 1};
    d.c_dims = {g.M, g.N};
    for (int64_t i = 0; i < g.batch_count; ++i) {
      int64_t a_off, b_off;
      batch_offsets(g, i, a_off, b_off);
      if (!onednn::matmul_f32(d, a + a_off, b + b_off, c + i * g.M * g.N)) return false;
    }
    return true;
  }
  auto with_matrix = [](std::vector<int64_t> dims, int64_t rows, int64_t cols) {
    dims.push_back(rows);
    dims.push_back(cols);
    return dims;
  };
  d.a_dims = with_matrix(ab, g.M, g.K);
  d.b_dims = with_matrix(bb, g.K, g.N);
  d.c_dims = with_matrix(cb, g.M, g.N);
  d.a_strides = contiguous_strides(d.a_dims);
  d.b_strides = contiguous_strides(d.b_dims);
  return onednn::matmul_f32(d, a, b, c);
}

void matmul_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                   const KernelContext& kctx) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  Tensor& c = out[0];
  MatmulGeometry g = matmul_geometry(node, a, b);
  if (c.numel() == 0) return;
  if (g.K == 0) {  // empty sum
    std::memset(c.raw(), 0, c.nbytes());
    return;
  }
  // Tiny products: a library call (a few microseconds) costs more than the plain loop.
  bool tiny = g.batch_count * g.M * g.N * g.K < kTinyProduct;
  if (a.dtype() == DType::f32 && !kctx.reference && !tiny &&
      matmul_onednn(g, a.data<float>(), b.data<float>(), c.data<float>()))
    return;
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    matmul_plain<T>(g, a.data<T>(), b.data<T>(), c.data<T>());
  });
}

// ---------------------------------------------------------------- Gemm

struct GemmAttrs {
  bool trans_a, trans_b;
  double alpha, beta;
};

GemmAttrs gemm_attrs(const Node& node) {
  GemmAttrs at{node.attr_int("transA", 0) != 0, node.attr_int("transB", 0) != 0, node.attr_float("alpha", 1.0),
               node.attr_float("beta", 1.0)};
  return at;
}

std::vector<TensorType> infer_gemm(InferContext& ctx) {
  const TensorType& a = ctx.in(0);
  const TensorType& b = ctx.in(1);
  GemmAttrs at = gemm_attrs(ctx.node());
  if (a.dtype != b.dtype) ctx.fail("inputs have different dtypes: {} and {}", dtype_name(a.dtype), dtype_name(b.dtype));
  if (!matmul_dtype_ok(a.dtype)) ctx.fail("dtype {} is not supported", dtype_name(a.dtype));
  if (a.rank() != 2 || b.rank() != 2) ctx.fail("A and B must be 2-D, got {} and {}", type_string(a), type_string(b));
  const Dim& m = a.shape[at.trans_a ? 1 : 0];
  const Dim& ka = a.shape[at.trans_a ? 0 : 1];
  const Dim& kb = b.shape[at.trans_b ? 1 : 0];
  const Dim& n = b.shape[at.trans_b ? 0 : 1];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    ctx.fail("inner dimensions differ: {} x {} (transA={}, transB={})", type_string(a), type_string(b), at.trans_a,
             at.trans_b);
  if (ctx.has(2)) {
    const TensorType& c = ctx.in(2);
    if (c.dtype != a.dtype) ctx.fail("C has dtype {}, expected {}", dtype_name(c.dtype), dtype_name(a.dtype));
    if (c.rank() > 2) ctx.fail("C must have rank <= 2, got {}", type_string(c));
    const Dim* target[2] = {&m, &n};
    for (int i = 0; i < c.rank(); ++i) {
      const Dim& cd = c.shape[static_cast<size_t>(i)];
      const Dim& t = *target[2 - c.rank() + i];
      if (cd.is_static() && cd.value != 1 && t.is_static() && cd.value != t.value)
        ctx.fail("C {} cannot be broadcast to [{},{}]", type_string(c), dim_string(m), dim_string(n));
    }
  }
  return {TensorType{a.dtype, Shape{m, n}}};
}

// y = alpha * y + beta * C in f32, C broadcast to [M, N] through strides (after oneDNN's product).
void gemm_epilogue_f32(float* y, int64_t M, int64_t N, float alpha, float beta, const float* c,
                       const std::vector<int64_t>& c_strides) {
  parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      float* row = y + i * N;
      if (!c) {
        for (int64_t j = 0; j < N; ++j) row[j] = alpha * row[j];
        continue;
      }
      const float* crow = c + i * c_strides[0];
      int64_t cs = c_strides[1];
      for (int64_t j = 0; j < N; ++j) row[j] = alpha * row[j] + beta * crow[j * cs];
    }
  });
}

// alpha * acc + beta * c in the op's arithmetic: f32 for f32, double for f64. Integers stay exact when
// alpha = beta = 1 (wrapping like numpy); otherwise they go through double and saturate back.
template <class T>
T gemm_combine(acc_t<T> acc, double alpha, double beta, const T* c) {
  if constexpr (std::is_floating_point_v<T>) {
    T v = static_cast<T>(alpha) * static_cast<T>(acc);
    if (c) v += static_cast<T>(beta) * *c;
    return v;
  } else {
    if (alpha == 1.0 && (!c || beta == 1.0))
      return static_cast<T>(static_cast<uint64_t>(acc) + (c ? static_cast<uint64_t>(static_cast<int64_t>(*c)) : 0));
    double v = alpha * static_cast<double>(acc) + (c ? beta * static_cast<double>(*c) : 0.0);
    if (std::isnan(v)) return T{0};
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  }
}

void gemm_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                 const KernelContext& kctx) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  const Tensor* cin = in.size() > 2 ? in[2] : nullptr;
  Tensor& y = out[0];
  GemmAttrs at = gemm_attrs(node);
  int64_t M = y.dim(0), N = y.dim(1), K = a.dim(at.trans_a ? 0 : 1);
  if (y.numel() == 0) return;
  std::vector<int64_t> c_strides;
  if (cin) {
    const std::vector<int64_t>& cs = cin->shape();
    int64_t target[2] = {M, N};
    for (size_t i = 0; i < cs.size(); ++i)
      if (cs.size() > 2 || (cs[i] != 1 && cs[i] != target[2 - cs.size() + i]))
        node_fail(node, "C {} cannot be broadcast to [{},{}]", cin->shape_string(), M, N);
    c_strides = broadcast_strides(cs, {M, N});
  }
  // Row and column strides of op(A) [M, K] and op(B) [K, N] in the row-major buffers.
  int64_t a_m = at.trans_a ? 1 : K, a_k = at.trans_a ? M : 1;
  int64_t b_k = at.trans_b ? 1 : N, b_n = at.trans_b ? K : 1;

  if (a.dtype() == DType::f32 && !kctx.reference && M * N * K >= kTinyProduct) {
    bool done = true;
    if (K == 0) {
      std::memset(y.raw(), 0, y.nbytes());  // empty sum: no library call
    } else {
      onednn::MatmulDesc d{{M, K}, {a_m, a_k}, {K, N}, {b_k, b_n}, {M, N}};
      done = onednn::matmul_f32(d, a.data<float>(), b.data<float>(), y.data<float>());
    }
    if (done) {
      if (at.alpha != 1.0 || cin)
        gemm_epilogue_f32(y.data<float>(), M, N, static_cast<float>(at.alpha), static_cast<float>(at.beta),
                          cin ? cin->data<float>() : nullptr, c_strides);
      return;
    }
  }
  dispatch_numeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ad = a.data<T>();
    const T* bd = b.data<T>();
    const T* cd = cin ? cin->data<T>() : nullptr;
    T* yd = y.data<T>();
    parallel_for(M, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, K * N)), [&](int64_t r0, int64_t r1) {
      std::vector<acc_t<T>> acc(static_cast<size_t>(N));
      for (int64_t i = r0; i < r1; ++i) {
        product_row<T>(ad + i * a_m, a_k, bd, b_k, b_n, K, N, acc.data());
        for (int64_t j = 0; j < N; ++j) {
          const T* cv = cd ? cd + i * c_strides[0] + j * c_strides[1] : nullptr;
          yd[i * N + j] = gemm_combine<T>(acc[j], at.alpha, at.beta, cv);
        }
      }
    });
  });
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  r.add(OpKind::MatMul, OpDef{infer_matmul, matmul_kernel, false, false, 2, 2});
  r.add(OpKind::Gemm, OpDef{infer_gemm, gemm_kernel, false, false, 2, 3});
}

}  // namespace kiln::linalg_ops
