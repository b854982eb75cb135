// Element types kiln understands.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

// New types go at the end: the numbers are the C API's (KILN_F32 ...) and saved files'.
enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i8, u8, boolean, i16, u16, u32, u64 };
inline constexpr int kNumDTypes = 13;

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "i64", "bool", ...
std::optional<DType> dtype_from_name(std::string_view name);
inline bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }
inline bool is_integer(DType t) { return !is_float(t) && t != DType::boolean; }
inline bool is_unsigned(DType t) { return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64; }
// f16 and bf16: 16 bits in memory, computed at least in f32 by kiln's kernels.
inline bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }
// f32 or a half type: the floats --precision narrows between, and what the GPU's libraries multiply.
inline bool is_f32_or_half(DType t) { return t == DType::f32 || is_half(t); }

}  // namespace kiln
