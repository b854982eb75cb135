#include "backend/cuda/device_ops.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <vector>

#include "backend/cuda/nvrtc.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// The kernels' parameter structs, byte for byte as in device_ops_source.cpp.
struct PiecesArg {
  uint64_t ptr[DeviceOps::kMaxPiecesPerLaunch];
  int64_t len[DeviceOps::kMaxPiecesPerLaunch];
  int64_t column[DeviceOps::kMaxPiecesPerLaunch];
  int64_t prefix[DeviceOps::kMaxPiecesPerLaunch + 1];
  int32_t count;
};
static_assert(sizeof(PiecesArg) == 1040, "KilnPieces' layout");

struct StridedArg {
  int64_t shape[DeviceOps::kMaxStridedRank];
  int64_t stride[DeviceOps::kMaxStridedRank];
  int32_t rank;
};
static_assert(sizeof(StridedArg) == 136, "KilnStrided's layout");

struct Pool2dArg {
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
};
static_assert(sizeof(Pool2dArg) == 13 * 8, "KilnPool2d's layout");

struct Im2colArg {
  int64_t n, c, in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  int64_t column_rows, column_pixels;
};
static_assert(sizeof(Im2colArg) == 16 * 8, "KilnIm2col's layout");

// Kernel table: the copy kernels come in five word widths (1, 2, 4, 8, 16 bytes), the float ones in four
// dtypes (kFloatTypes, in dtype_index order). The index of a kernel is its place in this order.
constexpr int kWords = 5;
constexpr const char* kWordNames[kWords] = {"kiln_w1", "kiln_w2", "kiln_w4", "kiln_w8", "kiln_w16"};
constexpr int kGatherI32 = 0, kGatherI64 = 5, kConcat = 10, kSplit = 15, kStrided = 20;
constexpr int kFloatTypes = 4;
constexpr const char* kFloatTypeNames[kFloatTypes] = {"f32", "f64", "bf16", "f16"};
constexpr int kMaxPool = 25, kGapWarp = kMaxPool + kFloatTypes, kGapBlock = kGapWarp + kFloatTypes,
              kIm2col = kGapBlock + kFloatTypes, kKernelCount = kIm2col + kFloatTypes;

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const char* prefix : {"kiln_gather_i32_", "kiln_gather_i64_", "kiln_concat_", "kiln_split_",
                             "kiln_strided_copy_"})
    for (const char* word : kWordNames) names.push_back(std::string(prefix) + word);
  for (const char* prefix : {"kiln_max_pool2d_", "kiln_gap_warp_", "kiln_gap_block_", "kiln_im2col_"})
    for (const char* type : kFloatTypeNames) names.push_back(std::string(prefix) + type);
  return names;
}

// The widest word (log2 of 1..16 bytes) dividing every size and address OR-ed into `bits`.
int word_index(uint64_t bits) { return bits == 0 ? 4 : std::min(4, std::countr_zero(bits)); }

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  KILN_INTERNAL_CHECK(!__builtin_mul_overflow(a, b, &r), "device cuda: {}: {} x {} overflows", what, a, b);
  return r;
}

void check_element_bytes(int element_bytes, std::string_view what) {
  KILN_INTERNAL_CHECK(element_bytes == 1 || element_bytes == 2 || element_bytes == 4 || element_bytes == 8,
                      "device cuda: {} of {}-byte elements", what, element_bytes);
}

// About four elements a thread (as the generated pointwise kernels); the grid-stride loop covers any
// rest. n > 0. Every kernel of device_ops_source() calls kiln_grid_prologue() first.
LaunchConfig grid_for(int64_t n, unsigned threads = 256) {
  const int64_t per_block = int64_t{threads} * 4;
  const int64_t blocks = std::min<int64_t>(n / per_block + (n % per_block != 0), 2147483647);
  return LaunchConfig{Dim3{static_cast<unsigned>(blocks), 1, 1}, Dim3{threads, 1, 1}, 0, true};
}

int dtype_index(DType dtype, std::string_view op) {
  switch (dtype) {
    case DType::f32: return 0;
    case DType::f64: return 1;
    case DType::bf16: return 2;
    case DType::f16: return 3;
    default: break;
  }
  // dtype_name lives in kiln_ir, which this module does not link.
  unsupported("device cuda: {} on dtype #{} is not supported (f32, f64, bf16 and f16 only)", op,
              static_cast<int>(dtype));
}

}  // namespace

struct DeviceOps::State {
  explicit State(const Context& c) : context(c) {}
  Context context;
  std::once_flag once;
  CubinCompiler compile;  // empty: NVRTC directly
  // Set once, under `once`:
  std::optional<Module> module;
  std::vector<Function> kernels;  // in kernel_names() order
  std::optional<Stream> setup;    // allocates the error record
  DeviceBuffer error;             // 4 long longs: code, site, value, bound
  PinnedBuffer readback, zeros;   // 32 bytes each
  std::mutex check_mutex;         // readback is one buffer for all checking threads
};

DeviceOps::DeviceOps(const Context& context, CubinCompiler compile) : state_(std::make_shared<State>(context)) {
  state_->compile = std::move(compile);
}

std::string DeviceOps::source() { return std::string(detail::device_ops_source()); }

const DeviceOps::State& DeviceOps::loaded() const {
  State& s = *state_;
  std::call_once(s.once, [&s] {  // a throw leaves the flag unset: the next call tries again
    std::vector<char> cubin =
        s.compile ? s.compile("kiln_device_ops", detail::device_ops_source())
                  : compile_to_cubin(detail::device_ops_source(), "kiln_device_ops.cu", s.context.device().arch()).cubin;
    Module module(s.context, cubin);
    std::vector<Function> kernels;
    for (const std::string& name : kernel_names()) kernels.push_back(module.function(name));
    KILN_INTERNAL_CHECK(kernels.size() == kKernelCount, "device cuda: {} device-op kernels", kernels.size());
    Stream setup(s.context);
    DeviceBuffer error(setup, 32);
    PinnedBuffer readback(s.context, 32), zeros(s.context, 32);
    std::memset(zeros.data(), 0, zeros.bytes());
    copy_to_device(setup, error, zeros, 32);
    setup.synchronize();  // the record exists and is zero before any stream uses it
    s.module = std::move(module);
    s.kernels = std::move(kernels);
    s.setup = std::move(setup);
    s.error = std::move(error);
    s.readback = std::move(readback);
    s.zeros = std::move(zeros);
  });
  return s;
}

void DeviceOps::prepare() const { loaded(); }

void DeviceOps::gather(const Stream& stream, CUdeviceptr data, CUdeviceptr indices, bool indices_i64, CUdeviceptr out,
                       int64_t outer, int64_t axis_dim, int64_t count, int64_t inner, int element_bytes,
                       int64_t site) const {
  check_element_bytes(element_bytes, "Gather");
  KILN_INTERNAL_CHECK(outer >= 0 && axis_dim >= 0 && count >= 0 && inner >= 0,
                      "device cuda: Gather of [{}, {}, {}] with {} indices", outer, axis_dim, inner, count);
  if (outer == 0 || count == 0 || inner == 0) return;
  const State& s = loaded();
  const int64_t row_bytes = checked_mul(inner, element_bytes, "Gather");
  const int w = word_index(static_cast<uint64_t>(row_bytes) | data | out);
  const int64_t inner_words = row_bytes >> w;
  const int64_t n = checked_mul(checked_mul(outer, count, "Gather"), inner_words, "Gather");
  const Function& f = s.kernels[static_cast<size_t>((indices_i64 ? kGatherI64 : kGatherI32) + w)];
  launch(stream, f, grid_for(n), data, indices, out, outer, axis_dim, count, inner_words, s.error.ptr(), site);
}

namespace {

struct Piece {
  CUdeviceptr ptr;
  int64_t column_bytes, len_bytes;  // place in the big row
};

// Concat (to_big) or Split: launches of at most kMaxPiecesPerLaunch pieces each.
void pieces_copy(const Stream& stream, std::span<const Function> kernels, CUdeviceptr big,
                 std::span<const CUdeviceptr> ptrs, std::span<const int64_t> lens, int64_t outer, int64_t inner,
                 int element_bytes, std::string_view op) {
  check_element_bytes(element_bytes, op);
  KILN_INTERNAL_CHECK(ptrs.size() == lens.size(), "device cuda: {} of {} tensors with {} lengths", op, ptrs.size(),
                      lens.size());
  KILN_INTERNAL_CHECK(outer >= 0 && inner >= 0, "device cuda: {} with outer {}, inner {}", op, outer, inner);
  const int64_t unit = checked_mul(inner, element_bytes, op);
  std::vector<Piece> pieces;
  int64_t row_bytes = 0;
  uint64_t bits = big;
  for (size_t i = 0; i < ptrs.size(); ++i) {
    KILN_INTERNAL_CHECK(lens[i] >= 0, "device cuda: {}: length {} of tensor {}", op, lens[i], i);
    const int64_t len_bytes = checked_mul(lens[i], unit, op);
    bits |= static_cast<uint64_t>(len_bytes);  // every column start is a sum of these
    // A Split output may be omitted (0); a Concat input of nonzero length may not.
    KILN_INTERNAL_CHECK(ptrs[i] != 0 || len_bytes == 0 || op == "Split", "device cuda: {}: tensor {} has no address",
                        op, i);
    if (len_bytes > 0 && ptrs[i] != 0) {
      pieces.push_back({ptrs[i], row_bytes, len_bytes});
      bits |= ptrs[i];
    }
    KILN_INTERNAL_CHECK(!__builtin_add_overflow(row_bytes, len_bytes, &row_bytes), "device cuda: {} overflows", op);
  }
  if (outer == 0 || pieces.empty()) return;
  checked_mul(outer, row_bytes, op);
  const int w = word_index(bits);
  const Function& f = kernels[static_cast<size_t>(w)];
  for (size_t first = 0; first < pieces.size(); first += DeviceOps::kMaxPiecesPerLaunch) {
    PiecesArg arg{};
    const size_t end = std::min(pieces.size(), first + DeviceOps::kMaxPiecesPerLaunch);
    for (size_t k = first; k < end; ++k) {
      const size_t j = k - first;
      arg.ptr[j] = pieces[k].ptr;
      arg.len[j] = pieces[k].len_bytes >> w;
      arg.column[j] = pieces[k].column_bytes >> w;
      arg.prefix[j + 1] = arg.prefix[j] + arg.len[j];
    }
    arg.count = static_cast<int32_t>(end - first);
    const int64_t n = outer * arg.prefix[arg.count];
    launch(stream, f, grid_for(n), arg, big, outer, int64_t{row_bytes >> w});
  }
}

}  // namespace

void DeviceOps::concat(const Stream& stream, std::span<const CUdeviceptr> inputs, std::span<const int64_t> lens,
                       CUdeviceptr out, int64_t outer, int64_t inner, int element_bytes) const {
  if (outer == 0 || inner == 0) return;
  const State& s = loaded();
  pieces_copy(stream, std::span(s.kernels).subspan(kConcat, kWords), out, inputs, lens, outer, inner, element_bytes,
              "Concat");
}

void DeviceOps::split(const Stream& stream, CUdeviceptr input, std::span<const CUdeviceptr> outputs,
                      std::span<const int64_t> lens, int64_t outer, int64_t inner, int element_bytes) const {
  if (outer == 0 || inner == 0) return;
  const State& s = loaded();
  pieces_copy(stream, std::span(s.kernels).subspan(kSplit, kWords), input, outputs, lens, outer, inner, element_bytes,
              "Split");
}

void DeviceOps::strided_copy(const Stream& stream, CUdeviceptr in, CUdeviceptr out, std::span<const int64_t> out_shape,
                             std::span<const int64_t> in_strides, int64_t in_offset, int element_bytes) const {
  check_element_bytes(element_bytes, "strided copy");
  KILN_INTERNAL_CHECK(out_shape.size() == in_strides.size(), "device cuda: strided copy of rank {} with {} strides",
                      out_shape.size(), in_strides.size());
  // Everything in bytes, with the element as a last dim of stride 1; then size-1 dims dropped and dims
  // that walk contiguously merged, so that the last dim is the widest contiguous run.
  struct Dim {
    int64_t size, stride;
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    KILN_INTERNAL_CHECK(out_shape[d] >= 0, "device cuda: strided copy to a dim of size {}", out_shape[d]);
    if (out_shape[d] == 0) return;
    if (out_shape[d] != 1) dims.push_back({out_shape[d], checked_mul(in_strides[d], element_bytes, "strided copy")});
  }
  dims.push_back({element_bytes, 1});
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty() && merged.back().stride == checked_mul(d.stride, d.size, "strided copy")) {
      merged.back() = {checked_mul(merged.back().size, d.size, "strided copy"), d.stride};
    } else {
      merged.push_back(d);
    }
  }
  KILN_INTERNAL_CHECK(merged.size() <= kMaxStridedRank, "device cuda: strided copy of {} dims after merging (at most {})",
                      merged.size(), kMaxStridedRank);
  const CUdeviceptr from = in + static_cast<CUdeviceptr>(checked_mul(in_offset, element_bytes, "strided copy"));
  uint64_t bits = from | out | static_cast<uint64_t>(merged.back().size);
  for (size_t d = 0; d + 1 < merged.size(); ++d) bits |= static_cast<uint64_t>(merged[d].stride);
  const int w = word_index(bits);
  StridedArg arg{};
  arg.rank = static_cast<int32_t>(merged.size());
  int64_t n = 1;
  for (size_t d = 0; d < merged.size(); ++d) {
    const bool last = d + 1 == merged.size();
    arg.shape[d] = last ? merged[d].size >> w : merged[d].size;
    arg.stride[d] = last ? 1 : merged[d].stride / (int64_t{1} << w);
    n = checked_mul(n, arg.shape[d], "strided copy");
  }
  const State& s = loaded();
  launch(stream, s.kernels[static_cast<size_t>(kStrided + w)], grid_for(n), from, out, arg, n);
}

void DeviceOps::max_pool2d(const Stream& stream, CUdeviceptr in, CUdeviceptr out, const Pool2dShape& g) const {
  const int t = dtype_index(g.dtype, "MaxPool");
  KILN_INTERNAL_CHECK(g.planes >= 0 && g.in_h >= 0 && g.in_w >= 0 && g.out_h >= 0 && g.out_w >= 0 &&
                          g.kernel_h >= 1 && g.kernel_w >= 1 && g.stride_h >= 1 && g.stride_w >= 1 &&
                          g.dilation_h >= 1 && g.dilation_w >= 1 && g.pad_top >= 0 && g.pad_left >= 0,
                      "device cuda: MaxPool of a bad shape ({} planes, {}x{} to {}x{})", g.planes, g.in_h, g.in_w,
                      g.out_h, g.out_w);
  const int64_t n = checked_mul(checked_mul(g.planes, g.out_h, "MaxPool"), g.out_w, "MaxPool");
  if (n == 0) return;
  const State& s = loaded();
  Pool2dArg arg{g.planes,   g.in_h,     g.in_w,     g.out_h,   g.out_w,    g.kernel_h,  g.kernel_w,
                g.stride_h, g.stride_w, g.pad_top, g.pad_left, g.dilation_h, g.dilation_w};
  launch(stream, s.kernels[static_cast<size_t>(kMaxPool + t)], grid_for(n), in, out, arg);
}

void DeviceOps::global_average_pool(const Stream& stream, CUdeviceptr in, CUdeviceptr out, int64_t n_times_c,
                                    int64_t spatial, DType dtype) const {
  const int t = dtype_index(dtype, "GlobalAveragePool");
  KILN_INTERNAL_CHECK(n_times_c >= 0 && spatial >= 0, "device cuda: GlobalAveragePool of {} planes of {}", n_times_c,
                      spatial);
  if (n_times_c == 0) return;
  checked_mul(n_times_c, spatial, "GlobalAveragePool");
  const State& s = loaded();
  constexpr unsigned kThreads = 256, kWarps = kThreads / 32;
  // A warp per plane while a plane is a few warps' worth of loads; a block per plane beyond.
  const bool block_per_plane = spatial >= 2048;
  const int64_t blocks = block_per_plane ? n_times_c : n_times_c / kWarps + (n_times_c % kWarps != 0);
  LaunchConfig config{Dim3{static_cast<unsigned>(std::min<int64_t>(blocks, 2147483647)), 1, 1}, Dim3{kThreads, 1, 1},
                      0, true};
  launch(stream, s.kernels[static_cast<size_t>((block_per_plane ? kGapBlock : kGapWarp) + t)], config, in, out,
         n_times_c, spatial);
}

void DeviceOps::im2col(const Stream& stream, CUdeviceptr in, CUdeviceptr columns, const Im2colShape& g) const {
  const int t = dtype_index(g.dtype, "im2col");
  KILN_INTERNAL_CHECK(g.n >= 0 && g.c >= 0 && g.in_h >= 0 && g.in_w >= 0 && g.out_h >= 0 && g.out_w >= 0 &&
                          g.kernel_h >= 1 && g.kernel_w >= 1 && g.stride_h >= 1 && g.stride_w >= 1 &&
                          g.dilation_h >= 1 && g.dilation_w >= 1 && g.pad_top >= 0 && g.pad_left >= 0,
                      "device cuda: im2col of a bad shape ([{}, {}, {}, {}] to {}x{}, kernel {}x{})", g.n, g.c, g.in_h,
                      g.in_w, g.out_h, g.out_w, g.kernel_h, g.kernel_w);
  // Every index the kernel forms fits in 64 bits: the sizes of both tensors, and the input coordinates
  // (at most out * stride + kernel * dilation from -pad).
  const int64_t rows = checked_mul(checked_mul(g.c, g.kernel_h, "im2col"), g.kernel_w, "im2col");
  const int64_t pixels = checked_mul(g.out_h, g.out_w, "im2col");
  KILN_INTERNAL_CHECK((g.rows_padded == 0 || g.rows_padded >= rows) && (g.pixels_padded == 0 || g.pixels_padded >= pixels),
                      "device cuda: im2col padded to {} rows, {} pixels for {} and {}", g.rows_padded, g.pixels_padded,
                      rows, pixels);
  const int64_t column_rows = g.column_rows(), column_pixels = g.column_pixels();
  const int64_t all_rows = checked_mul(g.n, column_rows, "im2col");
  checked_mul(all_rows, column_pixels, "im2col");
  checked_mul(checked_mul(checked_mul(g.n, g.c, "im2col"), g.in_h, "im2col"), g.in_w, "im2col");
  checked_mul(g.out_h, g.stride_h, "im2col");
  checked_mul(g.out_w, g.stride_w, "im2col");
  checked_mul(g.kernel_h, g.dilation_h, "im2col");
  checked_mul(g.kernel_w, g.dilation_w, "im2col");
  // The kernel counts rows and pixels in 32 bits (2^31 pixels is a 46341 x 46341 output).
  if (column_pixels > int64_t{INT32_MAX} || all_rows > int64_t{INT32_MAX})
    unsupported("device cuda: a convolution of {} x {} output pixels over {} columns rows (at most 2^31 of each)",
                g.out_h, g.out_w, all_rows);
  if (all_rows == 0 || column_pixels == 0) return;
  const State& s = loaded();
  Im2colArg arg{g.n,        g.c,        g.in_h,     g.in_w,     g.out_h,      g.out_w,      g.kernel_h, g.kernel_w,
                g.stride_h, g.stride_w, g.pad_top,  g.pad_left, g.dilation_h, g.dilation_w, column_rows, column_pixels};
  // A block a plane (and each image's padding rows), a chunk of up to 8 pixels a thread, and a group of
  // taps: as many groups as it takes for about 4 blocks a multiprocessor (a 3-channel stem has 3 planes).
  const unsigned threads = static_cast<unsigned>(std::min<int64_t>(256, (column_pixels + 31) / 32 * 32));
  const int64_t pixel_blocks = std::min<int64_t>((column_pixels + 8 * threads - 1) / (8 * threads), 65535);
  const int64_t plane_blocks = g.n * (g.c + (column_rows > rows ? 1 : 0));
  const int64_t taps = g.kernel_h * g.kernel_w, wanted = 4 * std::max(1, state_->context.device().sm_count);
  const int64_t tap_groups = std::clamp<int64_t>(wanted / std::max<int64_t>(1, plane_blocks * pixel_blocks), 1,
                                                 std::min<int64_t>(taps, 65535));
  LaunchConfig config{Dim3{static_cast<unsigned>(std::min<int64_t>(plane_blocks, 2147483647)),
                           static_cast<unsigned>(pixel_blocks), static_cast<unsigned>(tap_groups)},
                      Dim3{threads, 1, 1}, 0, true};
  launch(stream, s.kernels[static_cast<size_t>(kIm2col + t)], config, in, columns, arg);
}

std::optional<DeviceOpError> DeviceOps::take_error(const Stream& stream) const {
  const State& s = loaded();
  std::lock_guard lock(state_->check_mutex);
  copy_to_host(stream, s.readback, s.error, 32);
  stream.synchronize();
  std::span<const int64_t> record = s.readback.as<const int64_t>();
  if (record[0] == 0) return std::nullopt;
  DeviceOpError e;
  KILN_INTERNAL_CHECK(record[0] == 1, "device cuda: unknown device-op error code {}", record[0]);
  e.op = "Gather";
  e.site = record[1];
  e.value = record[2];
  e.bound = record[3];
  copy_to_device(stream, s.error, s.zeros, 32);  // ordered before the stream's later kernels
  return e;
}

void DeviceOps::check_errors(const Stream& stream) const {
  if (std::optional<DeviceOpError> e = take_error(stream)) throw UserError(e->message());
}

std::string DeviceOpError::message() const {
  std::string where = site >= 0 ? fmt::format("{} (site {})", op, site) : op;
  return fmt::format("device cuda: {}: index {} is out of range for an axis of size {}", where, value, bound);
}

namespace {

// One windowed axis (MaxPool's window, Conv's kernel: `what`); see pool_output_size.
int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                           int64_t pad_end, bool ceil_mode, std::string_view what) {
  KILN_INTERNAL_CHECK(in >= 0 && kernel >= 1 && stride >= 1 && dilation >= 1 && pad_begin >= 0 && pad_end >= 0,
                      "device cuda: {} axis of {} with kernel {}, stride {}, dilation {}, pads {}/{}", what, in, kernel,
                      stride, dilation, pad_begin, pad_end);
  const int64_t extent = checked_mul(kernel - 1, dilation, what) + 1;
  int64_t padded = 0;
  KILN_INTERNAL_CHECK(!__builtin_add_overflow(in, pad_begin, &padded) &&
                          !__builtin_add_overflow(padded, pad_end, &padded),
                      "device cuda: {} axis of {} with pads {}/{} overflows", what, in, pad_begin, pad_end);
  KILN_USER_CHECK(padded >= extent, "device cuda: {} extent {} is larger than the padded input {}", what, extent,
                  padded);
  const int64_t span = padded - extent;
  int64_t out = span / stride + 1;
  if (ceil_mode && span % stride != 0) {
    ++out;
    if ((out - 1) * stride >= in + pad_begin) --out;  // the last window must start inside input or begin pad
  }
  return out;
}

}  // namespace

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                         int64_t pad_end, bool ceil_mode) {
  return window_output_size(in, kernel, stride, dilation, pad_begin, pad_end, ceil_mode, "MaxPool window");
}

Pool2dShape make_max_pool2d_shape(int64_t n, int64_t c, int64_t in_h, int64_t in_w, std::span<const int64_t, 2> kernel,
                                  std::span<const int64_t, 2> strides, std::span<const int64_t, 4> pads,
                                  std::span<const int64_t, 2> dilations, bool ceil_mode, DType dtype) {
  Pool2dShape g;
  g.planes = checked_mul(n, c, "MaxPool");
  g.in_h = in_h;
  g.in_w = in_w;
  g.kernel_h = kernel[0];
  g.kernel_w = kernel[1];
  g.stride_h = strides[0];
  g.stride_w = strides[1];
  g.pad_top = pads[0];
  g.pad_left = pads[1];
  g.dilation_h = dilations[0];
  g.dilation_w = dilations[1];
  g.out_h = pool_output_size(in_h, kernel[0], strides[0], dilations[0], pads[0], pads[2], ceil_mode);
  g.out_w = pool_output_size(in_w, kernel[1], strides[1], dilations[1], pads[1], pads[3], ceil_mode);
  g.dtype = dtype;
  return g;
}

Im2colShape make_im2col_shape(int64_t n, int64_t c, int64_t in_h, int64_t in_w, std::span<const int64_t, 2> kernel,
                              std::span<const int64_t, 2> strides, std::span<const int64_t, 4> pads,
                              std::span<const int64_t, 2> dilations, DType dtype) {
  KILN_INTERNAL_CHECK(n >= 0 && c >= 0, "device cuda: im2col of [{}, {}, {}, {}]", n, c, in_h, in_w);
  Im2colShape g;
  g.n = n;
  g.c = c;
  g.in_h = in_h;
  g.in_w = in_w;
  g.kernel_h = kernel[0];
  g.kernel_w = kernel[1];
  g.stride_h = strides[0];
  g.stride_w = strides[1];
  g.pad_top = pads[0];
  g.pad_left = pads[1];
  g.dilation_h = dilations[0];
  g.dilation_w = dilations[1];
  g.out_h = window_output_size(in_h, kernel[0], strides[0], dilations[0], pads[0], pads[2], false, "Conv kernel");
  g.out_w = window_output_size(in_w, kernel[1], strides[1], dilations[1], pads[1], pads[3], false, "Conv kernel");
  g.dtype = dtype;
  return g;
}

}  // namespace kiln::backend::cuda
