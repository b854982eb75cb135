// Fuzz target: bytes -> "NAME=VALUE" lines -> Options::set, the settings table's value rules (issue 20:
// each new input surface gets a target). A value that is accepted must read back through Options::get
// and be accepted again, giving the same text: what `kiln settings` shows is what runs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "kiln/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::Options options;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(line.substr(0, eq)), value(line.substr(eq + 1));
    bool accepted = false;
    kiln::fuzz::guarded([&] {
      options.set(name, value);
      accepted = true;
    });
    if (!accepted) continue;
    std::string shown, again;
    kiln::fuzz::must_succeed("an accepted setting does not read back", [&] {
      shown = options.get(name);
      kiln::Options other;
      other.set(name, shown);
      again = other.get(name);
    });
    if (again != shown) kiln::fuzz::fail("a setting's text changes on a round trip", name + ": " + shown + " vs " + again);
  }
  return 0;
}
