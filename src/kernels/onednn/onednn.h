// f32 wrappers around oneDNN primitives for the eager CPU kernels. Every call builds (once, cached by
// shape and attributes) and runs one primitive on caller-owned plain row-major buffers. A wrapper
// returns false when oneDNN has no implementation for the case; the caller then uses its own loop.
// Callers handle zero-size tensors themselves: these functions must not be called with them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::onednn {

// C = A x B. All three have the same rank r (2..12): A [batch.., M, K], B [batch.., K, N],
// C [batch.., M, N] contiguous. A batch dim of A or B may be 1 where C's is larger (broadcast).
// Strides are in elements and may describe transposed operands (Gemm's transA / transB).
struct MatmulDesc {
  std::vector<int64_t> a_dims, a_strides;
  std::vector<int64_t> b_dims, b_strides;
  std::vector<int64_t> c_dims;
};
bool matmul_f32(const MatmulDesc& desc, const float* a, const float* b, float* c);

// Integer products on oneDNN's VNNI / AMX kernels (the QDQ plan, docs/plans/qdq_integer_gemm.md):
//   C[.., m, n] = scales[n or 0] * sum_k (A[.., m, k] - a_zero_point) * B[.., k, n]
// A is u8 or i8 with one zero point of its type; B is i8 with zero point 0 (ONNX Runtime's symmetric
// weights). The sum is exact in i32 (|A - zp| <= 255, |B| <= 128: K up to 65,793, checked); an f32 C is
// that sum converted to f32 (exact below 2^24) times one f32 scale per tensor or per column of C; an
// i32 C is the sum (MatMulInteger).
// The scales are constants of the primitive (oneDNN 2.6 runs run-time scales on its slower gemm:jit
// path, measured here), the zero point a run-time argument. False where oneDNN's implementation is
// not a VNNI or AMX kernel: without VNNI, oneDNN multiplies u8 by i8 with vpmaddubsw, whose 16-bit pair
// sums saturate (255 * 127 * 2 > 32767), so the caller's exact loop runs instead.
struct IntegerMatmulDesc {
  MatmulDesc shape;
  bool a_signed = false;      // A i8, else u8
  int32_t a_zero_point = 0;
  std::vector<float> scales;  // 1 or N values: C f32; none: C i32
};
bool matmul_integer(const IntegerMatmulDesc& desc, const void* a, const int8_t* b, void* c);
// The oneDNN implementation matmul_integer uses for `desc` ("brg:avx512_core_vnni"), or the one it
// refused, after "refused: "; empty where oneDNN has none.
std::string integer_matmul_implementation(const IntegerMatmulDesc& desc);
// Whether matmul_integer runs here (this CPU has VNNI or AMX), probed once with a small u8 x i8 product.
bool has_exact_integer_matmul();
// Whether oneDNN runs bf16 products on a bf16 instruction set here (AVX512_BF16 or AMX), probed once
// with a small matmul: without one its bf16 kernels emulate the conversions and lose to f32.
bool has_native_bf16_matmul();
// The longest K whose i32 sums of (A - zero point) * B cannot overflow: K * 255 * 128 < 2^31.
constexpr int64_t kMaxExactIntegerK = (int64_t{1} << 31) / (255 * 128);

// Convolution in ONNX layouts: src [N, C, spatial..], weights [OC, C/groups, kernel..], dst
// [N, OC, out..]; 1 to 3 spatial dims. Dilations are ONNX's (1 = dense). Pads may be asymmetric.
struct ConvDesc {
  std::vector<int64_t> src_dims, weights_dims, dst_dims;
  int64_t groups = 1;
  std::vector<int64_t> strides, dilations, pad_begin, pad_end;
};
// `bias` may be nullptr.
bool conv_f32(const ConvDesc& desc, const float* src, const float* weights, const float* bias, float* dst);

// Transposed convolution in ONNX layouts: src [N, C, spatial..], weights [C, OC/groups, kernel..],
// dst [N, OC, out..] with out = (in-1)*stride + (k-1)*dilation + 1 - pad_begin - pad_end. ONNX's
// output_padding is passed as a smaller (possibly negative) pad_end; false if oneDNN refuses that.
bool deconv_f32(const ConvDesc& desc, const float* src, const float* weights, const float* bias, float* dst);

// Pooling in NC[D]HW layout with explicit pads; pad_end may include the extra ceil_mode padding.
enum class PoolKind { max, avg_include_pad, avg_exclude_pad };
struct PoolDesc {
  PoolKind kind = PoolKind::max;
  std::vector<int64_t> src_dims, dst_dims;
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
};
bool pool_f32(const PoolDesc& desc, const float* src, float* dst);

}  // namespace kiln::onednn
