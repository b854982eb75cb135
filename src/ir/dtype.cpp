#include "kiln/dtype.h"

#include <array>

#include "support/error.h"

namespace kiln {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::f32, "f32", 4}, {DType::f16, "f16", 2}, {DType::bf16, "bf16", 2},
    {DType::f64, "f64", 8}, {DType::i64, "i64", 8}, {DType::i32, "i32", 4},
    {DType::i8, "i8", 1},   {DType::u8, "u8", 1},   {DType::boolean, "bool", 1},
    {DType::i16, "i16", 2}, {DType::u16, "u16", 2}, {DType::u32, "u32", 4},
    {DType::u64, "u64", 8},
}};
}  // namespace

size_t dtype_size(DType t) { return kInfo[static_cast<size_t>(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[static_cast<size_t>(t)].name; }
std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

}  // namespace kiln
