// Internal helpers of the linear-algebra / NN family (src/ops/linalg): MatMul, Gemm, Conv,
// ConvTranspose, pools and Resize. Eager f32 goes through oneDNN (src/kernels/onednn); the fp64
// reference mode and other dtypes use the plain loops here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/common.h"
#include "support/checked_math.h"

namespace kiln::linalg_ops {

// One registration function per source file of this folder (register.cpp calls them all).
void register_matmul_ops(OpRegistry& r);  // MatMul, Gemm
void register_matmul_integer_ops(OpRegistry& r);  // MatMulInteger
void register_conv_ops(OpRegistry& r);    // Conv, ConvTranspose
void register_pool_ops(OpRegistry& r);    // MaxPool, AveragePool, GlobalAveragePool
void register_resize_op(OpRegistry& r);   // Resize
void register_nms_op(OpRegistry& r);      // NonMaxSuppression
void register_det_op(OpRegistry& r);      // Det
void register_grid_sample_op(OpRegistry& r);  // GridSample
void register_spectral_ops(OpRegistry& r);    // STFT, MelWeightMatrix
void register_roi_align_op(OpRegistry& r);    // RoiAlign

// ---- MatMul geometry, shared by MatMul and MatMulInteger ----

constexpr int64_t kTinyProduct = 4096;  // multiply-adds below which a product skips oneDNN

// numpy's matmul shape of a x b (1-D operands promoted, batch dims broadcast); fails through ctx.
Shape matmul_shape(InferContext& ctx, const TensorType& a, const TensorType& b);
// Static geometry of a MatMul: 1-D operands promoted, batch dims aligned and broadcast.
struct MatmulGeometry {
  std::vector<int64_t> batch, a_batch, b_batch;  // same length; operands have 1 where absent
  int64_t M = 1, K = 1, N = 1;
  int64_t batch_count = 1;
};
MatmulGeometry matmul_geometry(const Node& node, const Tensor& a, const Tensor& b);
// Offsets (in elements) of A's and B's matrix for flat batch index `i`.
void batch_offsets(const MatmulGeometry& g, int64_t i, int64_t& a_off, int64_t& b_off);

// A user error naming the node (same wording as InferContext::fail), for kernels and shared helpers.
template <class... Args>
[[noreturn]] void node_fail(const Node& node, fmt::format_string<Args...> f, Args&&... args) {
  user_error("node '{}' ({}): {}", node.name, op_name(node.op), fmt::format(f, std::forward<Args>(args)...));
}
std::string node_what(const Node& node);  // "node 'x' (Op)", for checked arithmetic messages

// ---- Sliding-window geometry shared by Conv, ConvTranspose and the pools ----

enum class AutoPad { notset, same_upper, same_lower, valid };

struct WindowAttrs {
  size_t spatial = 0;                       // number of spatial dims
  std::vector<int64_t> kernel;              // kernel extent per spatial dim
  std::vector<int64_t> strides, dilations;  // >= 1
  std::vector<int64_t> pads;                // 2 * spatial: begins then ends (explicit pads, NOTSET only)
  AutoPad auto_pad = AutoPad::notset;
  bool ceil_mode = false;
};

// Reads kernel_shape (or `kernel` when the op takes it from the weights: pass a non-empty vector),
// strides, dilations, pads, auto_pad and ceil_mode, checking each against `spatial`.
WindowAttrs read_window_attrs(const Node& node, size_t spatial, std::vector<int64_t> kernel);

// One spatial axis of a forward window (Conv, pools): output size and the pads actually used
// (SAME_* computes them; ceil_mode does not change them). `in` is a static size.
struct AxisGeometry {
  int64_t out = 0, pad_begin = 0, pad_end = 0;
};
AxisGeometry window_axis(const Node& node, const WindowAttrs& w, size_t axis, int64_t in);

// Output spatial dims for inference: static where the input dim is static, the input's own dim when
// the window maps it to itself (1x1 stride-1 unpadded or SAME with stride 1), else a fresh dim.
Shape window_output_spatial(InferContext& ctx, const WindowAttrs& w, const Shape& in_spatial);

// The spatial dims of a static NC... shape.
inline std::vector<int64_t> spatial_dims(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 2, shape.end());
}

// Window geometry of 1 to 3 spatial dims, left-padded to exactly 3 (D, H, W) with unit axes, so one
// set of plain loops serves every rank. Index [0] is depth, [2] is width.
constexpr size_t kMaxSpatial = 3;
struct Spatial3 {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};
Spatial3 make_spatial3(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const WindowAttrs& w,
                       const std::vector<int64_t>& pad_begin);

// For output index o on one axis of a forward window, the range [k0, k1) of kernel taps whose input
// index o*stride - pad + k*dilation falls inside [0, in).
void valid_taps(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad, int64_t& k0,
                int64_t& k1);

}  // namespace kiln::linalg_ops
