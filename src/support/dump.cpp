#include "support/dump.h"

#include <filesystem>
#include <fstream>

#include "support/error.h"

namespace kiln {

void write_dump(const Options& options, std::string_view name, std::string_view text) {
  if (options.dump_dir.empty()) return;
  std::filesystem::path path = std::filesystem::path(options.dump_dir) / std::string(name);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (ec || !out) user_error("--dump-dir: cannot write {}", path.string());
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) user_error("--dump-dir: cannot write {}", path.string());
}

}  // namespace kiln
