// Fuzz target: ONNX model bytes -> import -> shape inference with constant folding -> verifier, then
// the IR text round trip of the result. Every rejection must be a UserError; the verifier and the
// round trip must never fail on a graph kiln accepted.
#include <cstddef>
#include <cstdint>
#include <omp.h>
#include <string_view>

#include "fuzz_util.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/import.h"
#include "passes/passes.h"

namespace {

// The printer's contract (ir/printer.h): a graph prints, parses back and prints identically unless a
// constant was elided. Large constants stay elided here (printing them inline costs too much time).
void check_text_round_trip(const kiln::Graph& g) {
  std::string text = kiln::print_graph(g);
  if (text.find("<elided") != std::string::npos) return;
  kiln::Graph back;
  try {
    back = kiln::parse_graph(text);
  } catch (const kiln::UserError& e) {
    kiln::fuzz::fail("printed IR of an imported graph does not parse", std::string(e.what()) + "\n" + text);
  }
  std::string again = kiln::print_graph(back);
  if (again != text) kiln::fuzz::fail("IR text round trip differs", text + "\n---\n" + again);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  omp_set_num_threads(1);  // folding runs kernels; one thread keeps runs reproducible and cheap
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kiln::Options options = kiln::fuzz::small_options();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::guarded([&] {
    kiln::Graph g = kiln::import_onnx_bytes(bytes, kiln::fuzz::scratch_dir("onnx"), options);
    kiln::verify_graph(g, "import");
    kiln::infer_shapes(g, options, /*fold=*/true);
    kiln::verify_graph(g, "fuzz");
    check_text_round_trip(g);
  });
  return 0;
}
