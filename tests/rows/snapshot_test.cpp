// Golden snapshots of generated row kernels: bert's LayerNorm (with its residual Add), the masked
// softmax with its NaN guard and LogSoftmax + GatherElements, as find_row_groups builds them over
// symbolic sizes. A change in the emitter shows up here as a kernel diff; if intended, rerun with
// KILN_UPDATE_SNAPSHOTS=1.
//
// The vector math prelude (kiln_exp, ...) is left out of the snapshot: it has its own tests, and its
// text changes with its implementation, not with the row emitter.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "codegen/cpu/vector_math.h"
#include "row_graphs.h"
#include "rows_test_util.h"

namespace kiln::rows_test {
namespace {

std::string kernel_text(const Graph& g) {
  auto groups = schedule::find_row_groups(g, {});
  if (groups.size() != 1) throw std::runtime_error("expected one row group");
  std::string code = codegen::cpu::emit_row_cpp(groups[0].kernel).source.code;
  std::string prelude(codegen::cpu::vector_math_prelude());
  if (size_t at = code.find(prelude); at != std::string::npos) code.replace(at, prelude.size(), "// <vector math prelude>\n");
  return code;
}

void check_snapshot(const std::string& code, const std::string& file) {
  fs::path path = fs::path(KILN_SOURCE_DIR) / "tests/rows/snapshots" / file;
  EXPECT_EQ(code.find("fast-math"), std::string::npos);
  const char* update = std::getenv("KILN_UPDATE_SNAPSHOTS");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << code;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing snapshot " << path << " (run with KILN_UPDATE_SNAPSHOTS=1)";
  std::ostringstream want;
  want << in.rdbuf();
  if (code == want.str()) return;
  std::istringstream got_lines(code), want_lines(want.str());
  std::string got_line, want_line;
  int line = 1;
  while (std::getline(got_lines, got_line) && std::getline(want_lines, want_line) && got_line == want_line) ++line;
  ADD_FAILURE() << "generated source differs from " << path << " at line " << line << ":\n  got:  " << got_line
                << "\n  want: " << want_line << "\nif intended, rerun with KILN_UPDATE_SNAPSHOTS=1";
}

TEST(RowSnapshots, LayerNorm) {
  std::string code = kernel_text(residual_layernorm_graph(Dim::sym("tokens"), 768));
  EXPECT_EQ(code, kernel_text(residual_layernorm_graph(Dim::sym("tokens"), 768)));  // deterministic
  check_snapshot(code, "layernorm.cpp.txt");
}

TEST(RowSnapshots, MaskedSoftmaxWithGuard) {
  std::string code = kernel_text(masked_softmax_graph(12, Dim::sym("seq")));
  EXPECT_EQ(code, kernel_text(masked_softmax_graph(12, Dim::sym("seq"))));
  check_snapshot(code, "masked_softmax.cpp.txt");
}

TEST(RowSnapshots, LogSoftmaxGather) {
  std::string code = kernel_text(log_softmax_gather_graph(Dim::sym("n"), Dim::sym("w")));
  EXPECT_EQ(code, kernel_text(log_softmax_gather_graph(Dim::sym("n"), Dim::sym("w"))));
  check_snapshot(code, "log_softmax_gather.cpp.txt");
}

}  // namespace
}  // namespace kiln::rows_test
