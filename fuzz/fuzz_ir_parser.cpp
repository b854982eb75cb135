// Fuzz target: IR text -> parse_graph. A graph the parser accepts must pass the verifier, and print
// -> parse -> print must give the same text (ir/printer.h's contract, with every constant inline).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::Graph g;
  bool parsed = false;
  kiln::fuzz::guarded([&] {
    g = kiln::parse_graph(text);
    parsed = true;
  });
  if (!parsed) return 0;  // rejected with a UserError: expected

  kiln::PrintOptions all;
  all.inline_all = true;
  std::string printed, again;
  kiln::fuzz::must_succeed("verify_graph failed on a parsed graph", [&] { kiln::verify_graph(g, "parse_graph"); });
  kiln::fuzz::must_succeed("print_graph failed on a parsed graph", [&] { printed = kiln::print_graph(g, all); });
  kiln::fuzz::must_succeed("printed IR does not parse back", [&] {
    kiln::Graph back = kiln::parse_graph(printed);
    kiln::verify_graph(back, "parse_graph(print_graph)");
    again = kiln::print_graph(back, all);
  });
  if (again != printed) kiln::fuzz::fail("IR text round trip differs", printed + "\n---\n" + again);
  return 0;
}
