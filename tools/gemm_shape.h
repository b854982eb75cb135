// A GEMM size M x N x K as `kiln sweep gemm --shapes` reads it ("128x768x3072"), for the CPU and the CUDA
// sweeps alike.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include "support/error.h"

namespace kiln::tools {

struct GemmShape {
  int64_t m, n, k;
};

// "MxNxK" with sizes 1 to 65536; anything else is a user error naming the text.
inline GemmShape parse_gemm_shape(const std::string& text) {
  char x1 = 0, x2 = 0;
  long long m = 0, n = 0, k = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lld%c%lld%c%lld%n", &m, &x1, &n, &x2, &k, &used) != 5 || x1 != 'x' || x2 != 'x' ||
      used != static_cast<int>(text.size()) || m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536)
    user_error("sweep gemm: shape '{}' is not MxNxK with sizes 1..65536", text);
  return {m, n, k};
}

}  // namespace kiln::tools
