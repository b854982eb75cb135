// Fuzz target: bytes -> a saved model's header, sections and graph (runtime/saved_model_format.h), the
// checks a load makes before it trusts anything in the file (issue 20: each new input surface gets a
// target). The checksum is skipped, else almost every input would stop there. The section area must lie
// inside the input, and every constant of the graph is read (ASan sees a read past the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#define XXH_INLINE_ALL  // header-only, as in codegen/cpu/content_hash.cpp
#include <xxhash.h>

#include "fuzz_util.h"
#include "runtime/saved_model_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::guarded([&] {
    nlohmann::json header = kiln::runtime::parse_saved_model_header(bytes, /*check_sum=*/false, "input");
    const std::string_view area = kiln::runtime::saved_model_area(bytes);
    if (area.data() < bytes.data() || area.data() + area.size() > bytes.data() + bytes.size())
      kiln::fuzz::fail("the section area lies outside the input", std::to_string(area.size()));
    kiln::Graph g = kiln::runtime::parse_saved_model_graph(header, area, nullptr, "input");
    // Every constant's bytes are read, so a data section reaching past the input is ASan's finding.
    uint64_t sum = 0;
    for (const kiln::Value& v : g.values)
      if (v.constant && v.constant->nbytes() > 0) sum += XXH3_64bits(v.constant->raw(), v.constant->nbytes());
    if (sum == 1) std::fputc(' ', stderr);  // keeps the reads
  });
  return 0;
}
