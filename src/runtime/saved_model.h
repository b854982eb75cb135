// A compiled model in one file (`kiln compile MODEL.onnx -o MODEL.kiln`, Session::compile_to_file): the
// graph as imported (IR text, its large constants as data sections), the mode, dims and every setting
// it was compiled with, the tuning store as the compile left it, and every compiled kernel object the
// compile had loaded. Loading unpacks the kernels and the store into a private folder and compiles the
// graph again with require_cached on: the same graph, settings and store give the same plan and the
// same kernels, all found in that folder, so no compiler runs and nothing is benchmarked (a kernel not
// in the file is an error, never a compile).
//
// Layout (integers little-endian):
//   "KILNSAVE" | u64 H | H bytes of header JSON | sections at 64-byte aligned offsets | XXH3-128 of
//   everything before it (16 bytes: high word, then low word)
// The header names the format, the kiln build (version and commit), the machine (device key and CPU
// features), the compiler identity the kernels' cache keys were made with, the mode, dims and settings,
// and every section: {"graph"}, {"tuning_store"} (absent when there was none), "kernels": [{key,
// command}], "data": [...] (one per `<data N>` of the graph), "packs": [{data: N, layout}] (a constant
// in a kernel's packed layout, absent when there is none), each with its offset and size.
//
// Refused with a user error naming the file: a damaged, truncated or garbled file (checksum first,
// then every offset, size and field), another format or kiln build, another machine. The checksum
// catches damage and edits that did not recompute it; it is not a signature. A saved model holds
// native code: load only files you trust, as you would a shared library (SECURITY.md).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kiln/graph.h"
#include "kiln/options.h"
#include "kiln/session.h"
#include "runtime/saved_model_format.h"
#include "support/packed_weights.h"

namespace kiln::runtime {

// True if the file at `path` starts with the magic (false for anything unreadable).
bool is_saved_model(const std::string& path);

// Writes `path` (replacing it) for a compile of `imported` that just ran in this process with
// `options`, `mode` and `dims` on a backend whose device key is `device_key`. The kernel objects are
// the cache entries loaded now (codegen/cpu/loaded_library.h): at least the compile's. CPU only.
// `packs`: the packed weights alive after the compile (a PackRecorder's); the file keeps those of the
// graph's constants, and a load offers them to its kernels (support/packed_weights.h).
void write_saved_model(const std::string& path, const Graph& imported, Mode mode, const Options& options,
                       const std::map<std::string, int64_t>& dims, const std::string& device_key,
                       const std::vector<PackRecorder::Entry>& packs);

// A private folder (mode 0700) removed with everything in it when the last owner lets go.
class TempFolder {
 public:
  TempFolder();
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A checked file, unpacked: what Session::from_graph needs to compile it again without compiling.
struct SavedModel {
  Graph graph;
  Mode mode = Mode::compiled;
  Options options;  // the file's settings, the caller's debug and dump_dir, require_cached on
  std::map<std::string, int64_t> dims;
  std::shared_ptr<TempFolder> folder;  // options.cache_dir: the kernels and the tuning store
  std::shared_ptr<PackOffer> packs;    // the file's packed weights, offered while this lives
};

// Reads and checks `path`. `user`: the caller's settings; one it set to a value other than its default
// and the file's is a user error (a saved model runs with the settings it was compiled with). `mode` and
// `dims`, when given, must agree with the file's. `device_key_of`: this machine's device key for the
// file's settings and mode (the backend's), compared with the file's.
SavedModel read_saved_model(const std::string& path, const Options& user, std::optional<Mode> mode,
                            const std::map<std::string, int64_t>& dims,
                            const std::function<std::string(const Options&, Mode)>& device_key_of);

}  // namespace kiln::runtime
