// Shared helpers for the reliability tests: one private kernel cache for the whole test binary, the
// demo transformer at a tiny size, inputs, and bit-for-bit comparison of outputs.
#pragma once
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include "kiln/options.h"
#include "common/temp_dir.h"
#include "kiln/session.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"

namespace kiln::reliability {

namespace fs = std::filesystem;
using Outputs = std::map<std::string, Tensor>;
using Inputs = std::map<std::string, Tensor>;

// A fresh folder under the system temp dir, removed with everything in it when it goes away.
class TempDir : public ::kiln::test_common::TempDir {
 public:
  TempDir() : ::kiln::test_common::TempDir("kiln-reliability-test") {}
};

// Options with a cache private to this test binary (made once, removed at exit), so that the demo's
// kernels are compiled once for every test that builds a compiled demo session.
inline Options demo_options() {
  static TempDir dir;  // lives until exit: the cache is shared by the tests of this process
  Options o;
  o.cache_dir = (dir.root() / "cache").string();
  o.compile_jobs = 2;
  return o;
}

// The demo transformer at batch=1, seq=`seq` (tiny, so that thousands of runs take seconds).
inline Session demo_session(Mode mode, int64_t seq = 8) {
  return Session::from_graph(demo_transformer(), mode, demo_options(), {{"batch", 1}, {"seq", seq}});
}

// `count` input sets for a session whose dims are bound, each from its own seed.
inline std::vector<Inputs> distinct_inputs(const Session& s, int count) {
  std::vector<Inputs> r;
  for (int i = 0; i < count; ++i) r.push_back(make_inputs(s.graph(), {}, 1000 + static_cast<uint64_t>(i)));
  return r;
}

// "" if `got` has the same names, dtypes, shapes and bytes as `want`; otherwise what differs.
inline std::string bit_difference(const Outputs& want, const Outputs& got) {
  if (want.size() != got.size()) return "different number of outputs";
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return "output '" + name + "' missing";
    const Tensor& g = it->second;
    if (g.dtype() != w.dtype() || g.shape() != w.shape())
      return "output '" + name + "': " + g.shape_string() + " instead of " + w.shape_string();
    if (std::memcmp(g.raw(), w.raw(), w.nbytes()) != 0) {
      size_t bytes = 0;
      const auto* a = static_cast<const unsigned char*>(w.raw());
      const auto* b = static_cast<const unsigned char*>(g.raw());
      while (bytes < w.nbytes() && a[bytes] == b[bytes]) ++bytes;
      return "output '" + name + "' differs first at byte " + std::to_string(bytes) + " of " +
             std::to_string(w.nbytes());
    }
  }
  return "";
}

// A positive integer from the environment, or `fallback`.
inline int env_count(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  int n = std::atoi(v);
  return n > 0 ? n : fallback;
}

}  // namespace kiln::reliability
