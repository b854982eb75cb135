// The arithmetic of ReduceSum/Mean/Max/Min/Prod, shared by the fast path and the reference loops:
// the starting value, one accumulation step, and the final conversion.
//
// Choices (ONNX leaves some open):
// - Integers accumulate in int64 with two's-complement wrap-around (computed in uint64, so no UB);
//   the result is cast back to the input type, so a narrow type wraps like numpy's astype.
// - Max/Min propagate NaN like numpy's maximum/minimum.
// - Reducing a zero-size axis gives the operation's identity, as the ONNX reference does
//   (opset 18 reference / test_reduce_*_empty_set): Sum 0, Prod 1, Max -inf, Min +inf (for integers
//   the type's lowest / highest value), Mean 0/0 = NaN for floats and 0 for integers (numpy's NaN cast
//   to an integer is undefined; kiln's casts map NaN to 0).
// - Integer Mean truncates toward zero (numpy's mean followed by astype).
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

template <ReduceKind K, class T, class A>
inline A reduce_init() {
  if constexpr (K == ReduceKind::Sum || K == ReduceKind::Mean) return A{0};
  else if constexpr (K == ReduceKind::Prod) return A{1};
  else if constexpr (std::is_floating_point_v<T>)
    return K == ReduceKind::Max ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
  else
    return K == ReduceKind::Max ? static_cast<A>(std::numeric_limits<T>::lowest())
                                : static_cast<A>(std::numeric_limits<T>::max());
}

template <ReduceKind K, class A>
inline A reduce_step(A acc, A v) {
  if constexpr (K == ReduceKind::Sum || K == ReduceKind::Mean) {
    if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
    else return acc + v;
  } else if constexpr (K == ReduceKind::Prod) {
    if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
    else return acc * v;
  } else if constexpr (std::is_integral_v<A>) {
    return K == ReduceKind::Max ? (v > acc ? v : acc) : (v < acc ? v : acc);
  } else if constexpr (K == ReduceKind::Max) {
    return (v > acc || v != v) ? v : acc;  // a NaN accumulator stays (v > NaN is false)
  } else {
    return (v < acc || v != v) ? v : acc;
  }
}

template <ReduceKind K, class T, class A>
inline T reduce_finalize(A acc, int64_t count) {
  if constexpr (K == ReduceKind::Mean) {
    if constexpr (std::is_floating_point_v<A>) return static_cast<T>(acc / static_cast<A>(count));
    else return static_cast<T>(count == 0 ? 0 : acc / count);
  } else {
    return static_cast<T>(acc);
  }
}

}  // namespace kiln
