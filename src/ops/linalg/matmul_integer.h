// What MatMulInteger takes and can sum exactly, for the passes that make it (passes/integer_matmuls.cpp).
#pragma once
#include <cstdint>

#include "kiln/dtype.h"

namespace kiln {

// The longest K whose i32 sums of (A - zero point) * B cannot overflow: |A - zp| <= 255, |B| <= 128, so
// K * 255 * 128 < 2^31 up to K = 65,793.
inline constexpr int64_t kMaxExactIntegerMatmulK = (int64_t{1} << 31) / (255 * 128);

// Its operands' element types: u8 and i8.
inline bool matmul_integer_operand(DType t) { return t == DType::u8 || t == DType::i8; }

}  // namespace kiln
