// Internal helpers of the shape / data-movement family (src/ops/shape). These ops move bytes, so their
// kernels work on element sizes (1, 2, 4, 8 bytes) and handle every dtype, f16/bf16 and bool included.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ops/common.h"
#include "support/checked_math.h"

namespace kiln::shape_ops {

// One registration function per source file of this folder (register.cpp calls them all).
void register_view_ops(OpRegistry& r);       // Identity, Reshape, Flatten, Squeeze, Unsqueeze
void register_transpose_op(OpRegistry& r);   // Transpose
void register_concat_split_ops(OpRegistry& r);
void register_slice_op(OpRegistry& r);
void register_gather_ops(OpRegistry& r);     // Gather, GatherElements
void register_broadcast_ops(OpRegistry& r);  // Expand, Tile
void register_pad_trilu_ops(OpRegistry& r);
void register_generator_ops(OpRegistry& r);  // Shape, Size, Constant, ConstantOfShape, Range
void register_scatter_scan_ops(OpRegistry& r);  // CumSum, TopK, ScatterElements, ScatterND
void register_select_ops(OpRegistry& r);  // GatherND, Compress, NonZero, ReverseSequence, BitShift
void register_dropout_op(OpRegistry& r);  // Dropout with a run-time ratio or training_mode
void register_unique_op(OpRegistry& r);  // Unique
void register_tfidf_op(OpRegistry& r);   // TfIdfVectorizer

// A user error that names the node (same wording as InferContext::fail), for kernels and helpers
// shared between inference and kernels.
template <class... Args>
[[noreturn]] void node_fail(const Node& node, fmt::format_string<Args...> f, Args&&... args) {
  user_error("node '{}' ({}): {}", node.name, op_name(node.op), fmt::format(f, std::forward<Args>(args)...));
}

// "node 'x' (Op)", the prefix for checked arithmetic messages.
std::string node_what(const Node& node);

// Calls f(U{}) with U an unsigned integer type of `esize` bytes (the element mover for any dtype).
template <class F>
decltype(auto) dispatch_bytes(size_t esize, F&& f) {
  switch (esize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: internal_error("dispatch_bytes: element size {}", esize);
  }
}

// The product of d[b, e).
int64_t dims_product(const std::vector<int64_t>& d, size_t b, size_t e);
// Index `v` into an axis of size `dim`, a negative one counting from the end; out of range is a user
// error naming the node and the axis.
int64_t wrapped_index(const Node& node, int64_t v, int64_t dim, int64_t axis);

// The indices as int64, each wrapped into [0, dim) (wrapped_index).
std::vector<int64_t> checked_indices(const Node& node, const Tensor& indices, int64_t dim, int64_t axis);

// The elements of a shape-like / index-like input (integer dtypes only; anything else is a user error).
std::vector<int64_t> read_ints(const Node& node, const Tensor& t, std::string_view what);
// Checks that input `i` has an integer dtype (inference side).
void require_integer_input(const InferContext& ctx, size_t i, std::string_view what);
// A 1-D input's static length, or -1 when it is symbolic; another rank is a user error (a scalar counts
// as length 1 when allow_scalar).
int64_t static_length_1d(const InferContext& ctx, size_t i, std::string_view what, bool allow_scalar = false);

// Fails when a produced rank exceeds the configured maximum.
void check_rank(const InferContext& ctx, int64_t rank);

// The product of dims [b, e) as one Dim when that is expressible (all static, or one symbol times 1),
// else a fresh symbolic dim.
Dim product_dim(InferContext& ctx, const Shape& s, size_t b, size_t e);

// Runs an op's own inference on the concrete inputs of a kernel call and returns output k's dims: the
// view kernels (Reshape, Squeeze, ...) get their output shape from the same code as compile time.
std::vector<TensorType> concrete_infer(InferFn infer, const Node& node, std::span<const Tensor* const> in);
std::vector<int64_t> concrete_output_dims(InferFn infer, const Node& node, std::span<const Tensor* const> in,
                                          size_t k);

// Writes `value` (converted to `dtype`) into one element at `dst` (for fill values such as Pad's).
void store_scalar(DType dtype, const Tensor& value, void* dst);

// Copies a strided view of `src` into the contiguous `dst`: dst[i_0..i_n] = src[sum_k i_k * strides[k]]
// (strides in elements; 0 broadcasts, negative walks backwards). Parallel over outer rows.
void strided_copy(size_t esize, std::span<const int64_t> dims, std::span<const int64_t> src_strides,
                  const void* src, void* dst);
// dst = src (contiguous, dims in_dims) transposed by perm; tiled when the inner axis moves.
void transpose_copy(size_t esize, std::span<const int64_t> in_dims, std::span<const int64_t> perm,
                    const void* src, void* dst);

}  // namespace kiln::shape_ops
