// The saved-model file format (runtime/saved_model.h has the layout): what can be checked from the
// bytes alone, with no file system, cache or machine, so that the fuzzer (fuzz/fuzz_saved_model.cpp)
// reaches every check a load makes before it trusts anything.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/graph.h"

namespace kiln::runtime {

inline constexpr std::string_view kSavedModelMagic = "KILNSAVE";
inline constexpr int kSavedModelFormat = 1;
inline constexpr uint64_t kSavedModelAlign = 64;   // sections start at multiples of this
inline constexpr uint64_t kSavedModelPrefixBytes = 16;   // the magic and the header size
inline constexpr uint64_t kSavedModelTrailerBytes = 16;  // the checksum

uint64_t saved_model_align(uint64_t v);
void put_u64(std::string& out, uint64_t v);
uint64_t get_u64(const char* p);

// The trailer of an XXH3-128 of everything before it: its two words, high first.
std::string saved_model_trailer(uint64_t high, uint64_t low);

// Called before and after each chunk of the checksum's one pass over the file: a load maps each chunk
// in before it is read and lets it go after, so the whole file is never resident at once.
struct ChecksumHooks {
  std::function<void(std::string_view)> before, after;
};

// The header of the saved model in `bytes` after the checks that need no machine: magic, size,
// checksum (unless `check_sum` is false, for the fuzzer), JSON, every field's type, and every section
// inside the file. Errors are user errors that start with `what`.
nlohmann::json parse_saved_model_header(std::string_view bytes, bool check_sum, const std::string& what,
                                        const ChecksumHooks& hooks = {});

// The bytes of every section, after the header (`bytes` already passed parse_saved_model_header).
std::string_view saved_model_area(std::string_view bytes);
// A section's bytes: {"offset", "size"} relative to `area`, checked against it.
std::string_view saved_model_section(const nlohmann::json& s, std::string_view area, const std::string& what,
                                     const std::string& name);

// The graph section parsed, its `<data N>` constants wrapping `area` (kept alive by `owner`, no copy).
Graph parse_saved_model_graph(const nlohmann::json& header, std::string_view area,
                              const std::shared_ptr<const void>& owner, const std::string& what);

}  // namespace kiln::runtime
