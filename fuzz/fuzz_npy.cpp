// Fuzz target: bytes -> parse_npy. A tensor that parses must survive npy_header + data -> parse_npy
// with the same dtype, shape and bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "fuzz_util.h"
#include "kiln/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kiln::Options options = kiln::fuzz::small_options();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::optional<kiln::Tensor> t;
  kiln::fuzz::guarded([&] { t = kiln::parse_npy(bytes, options, "fuzz input"); });
  if (!t) return 0;  // rejected with a UserError: expected

  kiln::Tensor back;
  kiln::fuzz::must_succeed("npy_header output does not parse back", [&] {
    std::string again = kiln::npy_header(*t);
    again.append(static_cast<const char*>(t->raw()), t->nbytes());
    back = kiln::parse_npy(again, options, "rewritten");
  });
  if (back.dtype() != t->dtype() || back.shape() != t->shape() || back.nbytes() != t->nbytes() ||
      (t->nbytes() && std::memcmp(back.raw(), t->raw(), t->nbytes()) != 0))
    kiln::fuzz::fail("npy round trip differs", t->shape_string() + " vs " + back.shape_string());
  return 0;
}
