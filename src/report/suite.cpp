// Suite files and temporary folders for `kiln bench`.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "report/bench.h"
#include "report/locate.h"
#include "support/error.h"
#include <fmt/format.h>

namespace kiln::report {
namespace fs = std::filesystem;

std::vector<BenchModel> read_suite(const fs::path& file, const fs::path& zoo_dir) {
  std::ifstream in(file);
  if (!in) user_error("--suite: cannot read {}", file.string());
  std::vector<BenchModel> models;
  std::string line, missing;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    BenchModel m;
    if (!(words >> m.name)) continue;
    for (std::string item; words >> item;) {
      size_t eq = item.find('=');
      char* end = nullptr;
      long long v = eq == std::string::npos ? -1 : std::strtoll(item.c_str() + eq + 1, &end, 10);
      if (eq == std::string::npos || eq == 0 || v < 0 || *end != '\0' || eq + 1 == item.size())
        user_error("{}:{}: expected SYMBOL=SIZE, got '{}'", file.string(), line_no, item);
      m.dims[item.substr(0, eq)] = v;
    }
    m.path = (zoo_dir / m.name / (m.name + ".onnx")).string();
    std::error_code ec;
    if (!fs::exists(m.path, ec)) {
      // The zoo's graphs ship in tests/data/zoo; the others come from the suite's own script (its header).
      const bool zoo = find_project_file(fs::path("tests") / "data" / "zoo" / (m.name + ".onnx")).has_value();
      missing += zoo ? fmt::format("\n  python3 scripts/make_zoo_weights.py {0} {1}", m.name, (zoo_dir / m.name).string())
                     : fmt::format("\n  {0}: see how {1} says to make it", m.name, file.string());
    }
    models.push_back(std::move(m));
  }
  if (models.empty()) user_error("--suite: {} lists no models", file.string());
  if (!missing.empty())
    user_error("--suite: some models or their weights are missing under {} (or give --zoo-dir); make them with:{}",
               zoo_dir.string(), missing);
  return models;
}

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    user_error("cannot create a temporary folder under {}", fs::temp_directory_path().string());
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace kiln::report
