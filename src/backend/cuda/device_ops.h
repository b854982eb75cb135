// Hand-written CUDA kernels for the zoo's ops that are neither pointwise, row reductions nor GEMMs:
// Gather, Concat, Split, a strided copy (Slice, Expand, Transpose views), MaxPool 2-D,
// GlobalAveragePool and im2col (2-D convolution as im2col + GEMM). One NVRTC program holds them all (device_ops_source.cpp), compiled for the
// context's device on first use and shared by every copy of the DeviceOps.
//
// Every call is asynchronous on the given stream and launches nothing for an empty output. Pointers are
// device addresses the caller keeps alive until the stream has run the work. Copies are dtype-agnostic:
// they move the widest word (up to 16 bytes) that the sizes and the pointers' alignment allow.
//
// Device-side errors: a kernel cannot throw, so Gather writes zeros where an index is out of range
// and records the first such index (with the caller's `site`, e.g. the node's id) in an error record
// of this DeviceOps. check_errors() synchronises a stream, reads the record, clears it and throws a
// UserError naming the op; the backend calls it where it synchronises anyway (the end of a run). The
// record is shared by all streams: an error of work on another stream shows at a later check.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "backend/cuda/cuda_objects.h"
#include "kiln/dtype.h"

namespace kiln::backend::cuda {

// MaxPool 2-D over NCHW planes. Pads at the end and ceil_mode only decide out_h / out_w (see
// make_max_pool2d_shape); taps on padding never count.
struct Pool2dShape {
  int64_t planes = 0;  // N * C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  DType dtype = DType::f32;  // f32, f64, bf16 or f16
};

// ONNX's output size of one pooled axis with explicit pads (auto_pad NOTSET), as kiln's CPU kernels
// compute it: floor((in + pads - extent) / stride) + 1, one more with ceil_mode when the division is
// not exact unless that last window would start past the input and its begin padding. A window larger
// than the padded input is a UserError.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                         int64_t pad_end, bool ceil_mode);

// The shape for an NCHW input [n, c, in_h, in_w]; pads in ONNX order {top, left, bottom, right}.
Pool2dShape make_max_pool2d_shape(int64_t n, int64_t c, int64_t in_h, int64_t in_w, std::span<const int64_t, 2> kernel,
                                  std::span<const int64_t, 2> strides, std::span<const int64_t, 4> pads,
                                  std::span<const int64_t, 2> dilations, bool ceil_mode, DType dtype);

// im2col for 2-D convolution over an NCHW input [n, c, in_h, in_w]: columns, row-major
// [n, c * kernel_h * kernel_w, out_h * out_w], where row r = (ci * kernel_h + ki) * kernel_w + kj of image b
// at output pixel p = oh * out_w + ow holds
//   in[b, ci, oh * stride_h - pad_top + ki * dilation_h, ow * stride_w - pad_left + kj * dilation_w]
// and 0 where that lies outside the input. Then out[b] = W[oc, rows()] x columns[b] ([oc, pixels()]) is
// the convolution's NCHW output for W the Conv weight [oc, c, kernel_h, kernel_w] viewed as a matrix.
// End pads only decide out_h / out_w (see make_im2col_shape). rows_padded / pixels_padded (0: none)
// give the columns a larger stride, the extra rows and columns +0: cuBLASLt's fast kernels want every
// leading dimension a multiple of 16 bytes, which a 7x7 or 14x14 output, or a 7x7x3 stem, is not.
struct Im2colShape {
  int64_t n = 0, c = 0;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  DType dtype = DType::f32;  // f32, f64, bf16 or f16

  int64_t rows_padded = 0, pixels_padded = 0;

  int64_t rows() const { return c * kernel_h * kernel_w; }  // the GEMM's K
  int64_t pixels() const { return out_h * out_w; }          // the GEMM's N, per image
  int64_t column_rows() const { return rows_padded ? rows_padded : rows(); }  // the columns' shape, per image
  int64_t column_pixels() const { return pixels_padded ? pixels_padded : pixels(); }
};

// The shape for an NCHW input [n, c, in_h, in_w]; pads in ONNX order {top, left, bottom, right} (auto_pad
// NOTSET). out = floor((in + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride) + 1 per axis,
// as ONNX Conv; a kernel extent larger than the padded input is a UserError.
Im2colShape make_im2col_shape(int64_t n, int64_t c, int64_t in_h, int64_t in_w, std::span<const int64_t, 2> kernel,
                              std::span<const int64_t, 2> strides, std::span<const int64_t, 4> pads,
                              std::span<const int64_t, 2> dilations, DType dtype);

// What a device-side check recorded.
struct DeviceOpError {
  std::string op;      // "Gather"
  int64_t site = -1;   // the caller's tag passed to the op
  int64_t value = 0;   // the offending index, as given
  int64_t bound = 0;   // the axis size
  std::string message() const;  // "device cuda: Gather (site 3): index 7 is out of range for an axis of size 5"
};

class DeviceOps {
 public:
  // Source to cubin for this context's device (the backend's goes through its cubin cache).
  using CubinCompiler = std::function<std::vector<char>(std::string_view name, std::string_view code)>;
  // Cheap: the compile runs at the first op (or prepare()), once, whichever thread gets there first.
  // Without `compile`, NVRTC compiles for the device's own architecture.
  explicit DeviceOps(const Context& context, CubinCompiler compile = {});

  static std::string source();  // the CUDA C++ text (for the NVRTC-only test)
  static constexpr int kMaxPiecesPerLaunch = 32;  // Concat / Split inputs per launch (more: several launches)
  static constexpr int kMaxStridedRank = 8;       // after merging contiguous dims

  void prepare() const;  // compiles and loads now (a compile failure is an InternalError)

  // Gather along `axis` of data [outer, axis_dim, inner] with `count` indices (i32 or i64; negative ones
  // count from the end) into out [outer, count, inner]. An index outside [-axis_dim, axis_dim) gives
  // zeros in its slice and an error for check_errors() carrying `site`.
  void gather(const Stream& stream, CUdeviceptr data, CUdeviceptr indices, bool indices_i64, CUdeviceptr out,
              int64_t outer, int64_t axis_dim, int64_t count, int64_t inner, int element_bytes,
              int64_t site = -1) const;

  // Concat along an axis: input i viewed as [outer, lens[i] * inner], out [outer, sum(lens) * inner].
  // An input with lens[i] == 0 is skipped (its pointer may be 0).
  void concat(const Stream& stream, std::span<const CUdeviceptr> inputs, std::span<const int64_t> lens,
              CUdeviceptr out, int64_t outer, int64_t inner, int element_bytes) const;

  // Split, the inverse: output i gets columns of the input; an output pointer of 0 (an omitted output)
  // or lens[i] == 0 is skipped.
  void split(const Stream& stream, CUdeviceptr input, std::span<const CUdeviceptr> outputs,
             std::span<const int64_t> lens, int64_t outer, int64_t inner, int element_bytes) const;

  // out (contiguous, out_shape) [i_0, ..., i_n] = in[in_offset + sum_d i_d * in_strides[d]], strides and
  // offset in elements; strides may be 0 (broadcast) or negative. Any rank whose merged form has at most
  // kMaxStridedRank dims.
  void strided_copy(const Stream& stream, CUdeviceptr in, CUdeviceptr out, std::span<const int64_t> out_shape,
                    std::span<const int64_t> in_strides, int64_t in_offset, int element_bytes) const;

  // MaxPool 2-D (f32, f64, bf16 or f16; halves compared in fp32), NaN-propagating as kiln's CPU kernel:
  // any NaN in a window gives NaN. The result is one of the window's inputs, bit for bit (-inf for a
  // window wholly on padding).
  void max_pool2d(const Stream& stream, CUdeviceptr in, CUdeviceptr out, const Pool2dShape& shape) const;

  // out[p] = mean of in[p, 0 .. spatial) (f32, f64, bf16 or f16), summed in double (f32, f64) or fp32
  // (bf16, f16), divided in double and rounded once to nearest even; spatial == 0 gives NaN.
  void global_average_pool(const Stream& stream, CUdeviceptr in, CUdeviceptr out, int64_t n_times_c,
                           int64_t spatial, DType dtype) const;

  // im2col (f32, f64, bf16 or f16; a bitwise copy, zeros for padding): `columns` holds n * rows() * pixels()
  // elements. Consecutive threads write consecutive pixels of one row.
  void im2col(const Stream& stream, CUdeviceptr in, CUdeviceptr columns, const Im2colShape& shape) const;

  // Synchronises `stream`, then returns and clears the error recorded by the kernels (none: nullopt).
  std::optional<DeviceOpError> take_error(const Stream& stream) const;
  // take_error(), throwing a UserError with its message when there was one.
  void check_errors(const Stream& stream) const;

 private:
  struct State;
  const State& loaded() const;
  std::shared_ptr<State> state_;
};

namespace detail {
std::string_view device_ops_source();  // device_ops_source.cpp
}  // namespace detail

}  // namespace kiln::backend::cuda
