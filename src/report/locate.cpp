#include "report/locate.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace kiln::report {
namespace fs = std::filesystem;

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

std::vector<fs::path> project_roots() {
  std::vector<fs::path> roots;
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  if (!ec) roots.push_back(cwd);
  fs::path dir = executable_dir();
  for (int up = 0; up < 4 && !dir.empty(); ++up) {
    if (std::find(roots.begin(), roots.end(), dir) == roots.end()) roots.push_back(dir);
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return roots;
}

std::optional<fs::path> find_project_file(const fs::path& relative) {
  for (const fs::path& root : project_roots()) {
    std::error_code ec;
    if (fs::exists(root / relative, ec)) return (root / relative).lexically_normal();
  }
  return std::nullopt;
}

std::optional<fs::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace kiln::report
