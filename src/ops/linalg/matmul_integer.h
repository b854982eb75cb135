// What MatMulInteger can sum exactly, for the passes that make it (passes/integer_matmuls.cpp).
#pragma once
#include <cstdint>

namespace kiln {

// The longest K whose i32 sums of (A - zero point) * B cannot overflow: |A - zp| <= 255, |B| <= 128, so
// K * 255 * 128 < 2^31 up to K = 65,793.
inline constexpr int64_t kMaxExactIntegerMatmulK = (int64_t{1} << 31) / (255 * 128);

}  // namespace kiln
