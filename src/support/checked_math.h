// Overflow-checked integer arithmetic for every size or offset that comes from a file or a shape.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "support/error.h"

namespace kiln {

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) user_error("{}: size overflows 64 bits ({} + {})", what, a, b);
  return r;
}

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) user_error("{}: size overflows 64 bits ({} * {})", what, a, b);
  return r;
}

// Product of non-negative dims; a negative dim is a user error.
inline int64_t checked_numel(std::span<const int64_t> dims, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) user_error("{}: negative dimension {}", what, d);
    n = checked_mul(n, d, what);
  }
  return n;
}

}  // namespace kiln
