// `kiln bench`: latency of kiln eager, kiln compiled and (optionally) ONNX Runtime on the same inputs
// and thread count in one process, runs interleaved so that drift hits every side alike; compile time
// cold and warm; accuracy of compiled against eager and against the peer.
#pragma once
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/options.h"

namespace kiln::report {

class OrtPeer;

struct BenchModel {
  std::string name;  // "bert", or the file's stem
  std::string path;  // the .onnx file; empty: the bundled demo transformer
  std::map<std::string, int64_t> dims;
};

struct BenchSettings {
  int iters = 30;
  int warmup = 5;
  int profile_runs = 3;  // profiled compiled runs after the timed ones, for the top kernels
  int top_kernels = 10;
  uint64_t seed = 1;
  // Idle time before each run, untimed: ONNX Runtime's and OpenMP's worker threads spin for a while
  // after a run returns, and on a machine with few cores that slows whichever side runs next.
  int settle_ms = 50;
  double tol = 1e-4;        // allclose tolerance of the accuracy rule
  double multiplier = 2.0;  // its RMSE multiplier
};

// Measures one model and returns its record (see docs/PERFORMANCE.md for the fields). `peer` may be
// null; `threads` is the thread count every side uses (kiln's OpenMP is already set to it).
nlohmann::json bench_model(const BenchModel& model, const BenchSettings& settings, const Options& options,
                           OrtPeer* peer, int threads);

// A suite file (bench/models/NAME.txt): one model a line, `NAME SYMBOL=SIZE...`, '#' starts a comment.
// Models are ZOO_DIR/NAME/NAME.onnx; a missing one is a UserError saying how to make its weights.
std::vector<BenchModel> read_suite(const std::filesystem::path& file, const std::filesystem::path& zoo_dir);

// A temporary folder (mode 0700), removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kiln::report
