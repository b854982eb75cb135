#include <cstdio>
#include <fmt/format.h>

#include "ir/printer.h"
#include "passes/passes.h"
#include "support/dump.h"

namespace kiln {
void dump_ir(const Graph& g, const Options& options, int step, const char* after) {
  if (!options.debug_on("ir") && options.dump_dir.empty()) return;
  std::string text = print_graph(g);
  if (options.debug_on("ir")) std::fprintf(stderr, "# IR after %s\n%s\n", after, text.c_str());
  write_dump(options, fmt::format("{:02d}_{}.ir", step, after), text);
}

void prepare_graph(Graph& g, const std::map<std::string, int64_t>& dims, const Options& options) {
  dump_ir(g, options, 0, "import");
  bind_dims(g, dims);  // before inference, so that sizes known from the inputs flow everywhere
  infer_shapes(g, options, /*fold=*/true);
  fold_and_inline_ifs(g, options);
  dump_ir(g, options, 1, "infer_shapes_fold");
}

}  // namespace kiln
