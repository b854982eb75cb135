// Internal helpers of the elementwise family (src/ops/elementwise): registration per source file,
// shared shape inference, dtype checks and the dtype conversion used by Cast and Pow.
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/common.h"

namespace kiln::elementwise {

// One registration function per source file of this folder (register.cpp calls them all).
void register_unary_math_ops(OpRegistry& r);        // Abs Neg Sqrt Reciprocal Exp Log Erf Tanh Floor Ceil Sin Cos
void register_unary_activation_ops(OpRegistry& r);  // Sigmoid Relu LeakyRelu HardSigmoid HardSwish Softplus Elu Clip
void register_unary_logic_ops(OpRegistry& r);       // Not IsNaN IsInf
void register_cast_op(OpRegistry& r);
void register_arithmetic_ops(OpRegistry& r);        // Add Sub Mul Div Pow Mod
void register_compare_ops(OpRegistry& r);           // Equal Less Greater LessOrEqual GreaterOrEqual And Or Xor
void register_variadic_ops(OpRegistry& r);          // Min Max Sum Mean Where

// A user error that names the node (same wording as InferContext::fail), for kernels.
template <class... Args>
[[noreturn]] void node_fail(const Node& node, fmt::format_string<Args...> f, Args&&... args) {
  user_error("node '{}' ({}): {}", node.name, op_name(node.op), fmt::format(f, std::forward<Args>(args)...));
}

// Which input dtypes an op accepts (f16/bf16 count as float: the executor widens them).
enum class TypeClass { floating, numeric, signed_numeric, integer, integer_or_bool, boolean, any };
bool dtype_in_class(DType t, TypeClass c);
void check_dtype(const InferContext& ctx, size_t input, TypeClass c);

// Shape inference: output = input 0's type (dtype checked against `c`).
std::vector<TensorType> infer_unary_same(InferContext& ctx, TypeClass c);
// Broadcast of every present input; all must share input 0's dtype (checked against `c`).
TensorType infer_broadcast_same_dtype(InferContext& ctx, TypeClass c);

// Elements per thread below which parallel loops stay serial: cheap ops (add) and costly ops (erf).
inline constexpr int64_t kCheapGrain = 32768;
inline constexpr int64_t kCostlyGrain = 4096;
// The fp64 oracle runs serially (plain loops); eager mode splits work across threads.
inline int64_t grain_for(const KernelContext& kc, int64_t grain) {
  return kc.reference ? std::numeric_limits<int64_t>::max() / 4 : grain;
}

// Converts every element of `t` to `to` (any dtype pair, f16/bf16 included, rounded once).
// Float to integer truncates toward zero, NaN gives 0 and out-of-range values saturate; integer to
// integer wraps (two's complement, like numpy astype); anything to bool is != 0 (NaN is true).
Tensor convert_elements(const Tensor& t, DType to, bool parallel);
void convert_into(const Tensor& in, Tensor& out, bool parallel);

// Signed wrap-around arithmetic (no undefined behaviour on overflow), identity for floats and bool.
template <class T>
inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class T>
inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <class T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Promote u8/i8 through unsigned int: unsigned char * unsigned char would promote to signed int.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else if constexpr (std::is_same_v<T, bool>) {
    return a && b;  // a scatter's mul reduction over bool
  } else {
    return a * b;
  }
}

}  // namespace kiln::elementwise
