// MatMulInteger: Y (i32) = (A - a_zero_point) x (B - b_zero_point), numpy's matmul shapes, A and B u8 or
// i8, each zero point a scalar of its operand's type (kiln's form: the integer_matmuls pass makes it from
// a QDQ product; the importer still reads ONNX's MatMulInteger, whose zero points may be per row or per
// column, as an i32 MatMul). Sums wrap in i32 as ONNX allows; where they cannot (K <= 65,793) and this
// CPU has VNNI or AMX, a product with an i8 B of zero point 0 and no batch on B runs on oneDNN.
#include <cstring>

#include "kernels/onednn/onednn.h"
#include "ops/linalg/linalg_ops.h"
#include "ops/linalg/matmul_integer.h"

namespace kiln::linalg_ops {
namespace {

static_assert(kMaxExactIntegerMatmulK == onednn::kMaxExactIntegerK);

std::vector<TensorType> infer_matmul_integer(InferContext& ctx) {
  const TensorType& a = ctx.in(0);
  const TensorType& b = ctx.in(1);
  if (!matmul_integer_operand(a.dtype) || !matmul_integer_operand(b.dtype))
    ctx.fail("A and B must be u8 or i8, got {} and {}", dtype_name(a.dtype), dtype_name(b.dtype));
  for (size_t i : {size_t{2}, size_t{3}}) {
    if (!ctx.has(i)) continue;
    const TensorType& zp = ctx.in(i);
    if (zp.dtype != ctx.in(i - 2).dtype)
      ctx.fail("zero point {} is {}, its operand {}", i, dtype_name(zp.dtype), dtype_name(ctx.in(i - 2).dtype));
    for (const Dim& d : zp.shape)
      if (!(d == Dim::fixed(1))) ctx.fail("zero point {} must be a scalar, got {}", i, type_string(zp));
  }
  return {TensorType{DType::i32, matmul_shape(ctx, a, b)}};
}

int32_t zero_point(std::span<const Tensor* const> in, size_t i) {
  return i < in.size() && in[i] ? static_cast<int32_t>(in[i]->as_double(0)) : 0;
}

template <class A, class B>
void matmul_integer_plain(const MatmulGeometry& g, const A* a, int32_t za, const B* b, int32_t zb, int32_t* c) {
  const int64_t rows = g.batch_count * g.M;
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.K * g.N)), [&](int64_t r0, int64_t r1) {
    std::vector<uint32_t> acc(static_cast<size_t>(g.N));  // unsigned: the sums wrap, never overflow
    for (int64_t r = r0; r < r1; ++r) {
      int64_t a_off, b_off;
      batch_offsets(g, r / g.M, a_off, b_off);
      const A* arow = a + a_off + (r % g.M) * g.K;
      std::fill(acc.begin(), acc.end(), 0u);
      for (int64_t k = 0; k < g.K; ++k) {
        const auto x = static_cast<uint32_t>(int32_t{arow[k]} - za);
        const B* brow = b + b_off + k * g.N;
        for (int64_t j = 0; j < g.N; ++j) acc[size_t(j)] += x * static_cast<uint32_t>(int32_t{brow[j]} - zb);
      }
      std::memcpy(c + r * g.N, acc.data(), acc.size() * sizeof(int32_t));
    }
  });
}

// oneDNN's exact kernels: B i8 without a zero point or a batch (A's batch folds into its rows).
bool matmul_integer_onednn(const MatmulGeometry& g, const Tensor& a, int32_t za, const Tensor& b, int32_t zb, int32_t* c) {
  for (int64_t d : g.b_batch)
    if (d != 1) return false;
  if (b.dtype() != DType::i8 || zb != 0 || g.K > onednn::kMaxExactIntegerK || !onednn::has_exact_integer_matmul())
    return false;
  const int64_t rows = g.batch_count * g.M;
  onednn::IntegerMatmulDesc d;
  d.shape = {{rows, g.K}, {g.K, 1}, {g.K, g.N}, {g.N, 1}, {rows, g.N}};
  d.a_signed = a.dtype() == DType::i8;
  d.a_zero_point = za;
  return onednn::matmul_integer(d, a.raw(), b.data<int8_t>(), c);
}

void matmul_integer_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                           const KernelContext& kctx) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  Tensor& c = out[0];
  const MatmulGeometry g = matmul_geometry(node, a, b);
  if (c.numel() == 0) return;
  const int32_t za = zero_point(in, 2), zb = zero_point(in, 3);
  int32_t* y = c.data<int32_t>();
  if (g.K == 0) {
    std::memset(c.raw(), 0, c.nbytes());
    return;
  }
  // The reference mode keeps the plain loop: the oracle does not share oneDNN's code.
  if (!kctx.reference && g.batch_count * g.M * g.N * g.K >= kTinyProduct && matmul_integer_onednn(g, a, za, b, zb, y))
    return;
  auto with_b = [&](const auto* pa) {
    if (b.dtype() == DType::u8)
      matmul_integer_plain(g, pa, za, b.data<uint8_t>(), zb, y);
    else
      matmul_integer_plain(g, pa, za, b.data<int8_t>(), zb, y);
  };
  if (a.dtype() == DType::u8)
    with_b(a.data<uint8_t>());
  else
    with_b(a.data<int8_t>());
}

}  // namespace

void register_matmul_integer_ops(OpRegistry& r) {
  r.add(OpKind::MatMulInteger, OpDef{infer_matmul_integer, matmul_integer_kernel, false, false, 2, 4});
}

}  // namespace kiln::linalg_ops
