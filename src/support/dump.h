// Debug dumps: the IR after each step and the generated sources, to stderr (KILN_DEBUG=ir) and/or to
// files under options.dump_dir (--dump-dir), numbered in pipeline order.
#pragma once
#include <string>
#include <string_view>

#include "kiln/options.h"

namespace kiln {

// Writes `text` to <dump_dir>/<name> (creating folders); a no-op without dump_dir. Failing to write a
// dump is a user error (the user asked for it).
void write_dump(const Options& options, std::string_view name, std::string_view text);

}  // namespace kiln
