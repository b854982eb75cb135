#include <cstdio>

#include "ir/printer.h"
#include "passes/passes.h"

namespace kiln {
namespace {
void dump(const Graph& g, const Options& options, const char* after) {
  if (options.debug_on("ir")) std::fprintf(stderr, "# IR after %s\n%s\n", after, print_graph(g).c_str());
}
}  // namespace

void prepare_graph(Graph& g, const std::map<std::string, int64_t>& dims, const Options& options) {
  dump(g, options, "import");
  bind_dims(g, dims);  // before inference, so that sizes known from the inputs flow everywhere
  infer_shapes(g, options, /*fold=*/true);
  dump(g, options, "infer_shapes+fold");
}

}  // namespace kiln
