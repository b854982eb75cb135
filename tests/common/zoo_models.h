// The zoo models (tests/data/zoo) with their weights, made from the manifest by
// scripts/make_zoo_weights.py (python3-numpy) into a folder of this build's, once.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace kiln::test_common {

// The six zoo models at the sizes of tests/CMakeLists.txt's zoo checks (short sequences), with what
// their compile must contain.
struct ZooModel {
  const char* name;
  std::map<std::string, int64_t> dims;
  bool has_rows, has_generated;  // a row group; any generated group (every model has library calls)
};
inline void PrintTo(const ZooModel& m, std::ostream* os) { *os << m.name; }
inline std::vector<ZooModel> zoo_models() {
  return {{"resnet18", {{"batch", 1}}, false, false},
          {"distilbert", {{"batch", 1}, {"seq", 32}}, true, true},
          {"bert", {{"batch", 1}, {"seq", 32}}, true, true},
          {"gpt2", {{"batch", 1}, {"seq", 32}}, true, true},
          {"vit", {{"batch", 1}}, true, true},
          {"trocr_small", {{"batch", 1}, {"dec_seq", 8}}, true, true}};
}

// The model's .onnx beside its weights, or an empty path and `why`: "SKIPPED: ..." when this machine
// cannot make them (no numpy), anything else when making them failed.
inline std::filesystem::path zoo_model(const std::string& model, std::string& why) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(KILN_BINARY).parent_path() / "zoo_tests" / model;
  const fs::path onnx = dir / (model + ".onnx");
  if (fs::exists(dir / (model + ".weights.bin")) && fs::exists(onnx)) return onnx;
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    why = "SKIPPED: python3-numpy is not installed (scripts/install_deps.sh), so the zoo weights cannot be made";
    return {};
  }
  // Into a fresh folder renamed into place, so that two test processes never read a half-written file.
  const fs::path part = dir.string() + ".part" + std::to_string(::getpid());
  const std::string cmd = "/usr/bin/python3 " KILN_SOURCE_DIR "/scripts/make_zoo_weights.py " + model + " " +
                          part.string() + " >/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    why = "make_zoo_weights.py failed: " + cmd;
    return {};
  }
  std::error_code ec;
  fs::create_directories(dir.parent_path());
  fs::rename(part, dir, ec);  // another process may have won the race: its folder is as good
  fs::remove_all(part, ec);
  if (!fs::exists(onnx)) why = "no " + onnx.string() + " after make_zoo_weights.py";
  return fs::exists(onnx) ? onnx : fs::path();
}

// The model's graph (tests/data/zoo) copied into `dir` beside a weights file of zeros of the right size
// (sparse: nothing is written), for tests of the plan, which does not depend on the weights' values.
// An empty path when the data is missing.
inline std::filesystem::path zoo_graph_with_zero_weights(const std::string& model, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const fs::path data = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "zoo";
  std::ifstream manifest(data / "manifest.json");
  if (!manifest.good()) return {};
  const nlohmann::json m = nlohmann::json::parse(manifest)["models"][model];
  const std::string graph = m["graph_file"];
  fs::create_directories(dir);
  fs::copy_file(data / graph, dir / graph, fs::copy_options::overwrite_existing);
  const int fd = ::open((dir / m["weights_file_not_shipped"].get<std::string>()).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return {};
  const bool sized = ::ftruncate(fd, m["weights_bytes"].get<int64_t>()) == 0;
  ::close(fd);
  return sized ? dir / graph : fs::path();
}

}  // namespace kiln::test_common
