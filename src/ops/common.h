// Helpers shared by every op family: dtype dispatch, axes, broadcasting, parallel loops.
#pragma once
#include <omp.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/registry.h"

namespace kiln {

// Calls f(T{}) with T the C++ type of `t`. f16/bf16 are not dispatched (the executor runs them in f32
// unless an op says it handles them): they are an internal error here.
template <class F>
decltype(auto) dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i64: return f(int64_t{});
    case DType::i32: return f(int32_t{});
    case DType::i8: return f(int8_t{});
    case DType::u8: return f(uint8_t{});
    case DType::i16: return f(int16_t{});
    case DType::u16: return f(uint16_t{});
    case DType::u32: return f(uint32_t{});
    case DType::u64: return f(uint64_t{});
    case DType::boolean: return f(bool{});
    default: internal_error("dispatch: dtype {} must be converted to f32 first", dtype_name(t));
  }
}
// Numeric types only (no bool).
template <class F>
decltype(auto) dispatch_numeric(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i64: return f(int64_t{});
    case DType::i32: return f(int32_t{});
    case DType::i8: return f(int8_t{});
    case DType::u8: return f(uint8_t{});
    case DType::i16: return f(int16_t{});
    case DType::u16: return f(uint16_t{});
    case DType::u32: return f(uint32_t{});
    case DType::u64: return f(uint64_t{});
    default: internal_error("dispatch: dtype {} is not numeric here", dtype_name(t));
  }
}
// Floating types only.
template <class F>
decltype(auto) dispatch_float(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    default: internal_error("dispatch: dtype {} is not f32/f64", dtype_name(t));
  }
}

// Accumulator type: double for the fp64 reference and for f64, float for f32 eager, int64 for ints
// (uint64 for u64, whose values past 2^63 int64 cannot order).
template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<T>, T,
                                 std::conditional_t<std::is_same_v<T, uint64_t>, uint64_t, int64_t>>;

// Normalises a possibly negative axis against `rank`; out of range is a user error naming the node.
int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank);
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank);

// Broadcast of two shapes under ONNX (numpy) rules; symbolic dims are kept where they decide the size.
Shape broadcast_shapes(const InferContext& ctx, const Shape& a, const Shape& b);
std::vector<int64_t> broadcast_dims(const Node& node, const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Strides (in elements) to read an input of shape `in` as if it had shape `out` (0 on broadcast dims).
// `in` is right-aligned against `out`.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// Runs f(begin, end) over [0, n) split across the OpenMP team; serial when the work is small.
template <class F>
void parallel_for(int64_t n, int64_t min_per_thread, F&& f) {
  if (n <= 0) return;
  int threads = omp_get_max_threads();
  if (threads <= 1 || n < 2 * min_per_thread) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), id = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = std::min<int64_t>(n, chunk * id), e = std::min<int64_t>(n, b + chunk);
    if (b < e) f(b, e);
  }
}

}  // namespace kiln
