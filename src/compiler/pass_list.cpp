#include "compiler/pass_list.h"

#include <cstdio>

#include <fmt/format.h>

#include "ir/verifier.h"
#include "passes/passes.h"
#include "support/dump.h"
#include "support/error.h"

namespace kiln::compiler {

void PassList::rethrow_in(const char* name, const InternalError& e) const {
  std::string what = e.what();
  if (what.rfind("internal error: ", 0) == 0) what.erase(0, 16);
  if (what.rfind("pass '", 0) == 0) throw e;
  internal_error("pass '{}': {}", name, what);
}

void PassList::finish(const char* name, const std::string* text, const char* channel) {
  verify_graph(graph_, name);
  const int step = next_++;
  if (!text) {
    dump_ir(graph_, options_, step, name);
    return;
  }
  if (channel && options_.debug_on(channel)) std::fprintf(stderr, "# %s\n%s", name, text->c_str());
  write_dump(options_, fmt::format("{:02d}_{}.txt", step, name), *text);
}

}  // namespace kiln::compiler
