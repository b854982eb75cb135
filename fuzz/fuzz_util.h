// Shared pieces of the libFuzzer targets: the expected-failure guard, the options with small limits,
// and a private scratch folder per process.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <typeinfo>
#include <unistd.h>

#include "kiln/errors.h"
#include "kiln/options.h"

namespace kiln::fuzz {

// Aborts with a message, so that libFuzzer records the input as a crash.
[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\n==kiln-fuzz== %s\n%s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `body` on one input. A UserError (UnsupportedError included) is kiln rejecting bad input: the
// expected outcome. Anything else thrown is a finding (InternalError is a kiln bug by definition).
template <class Body>
void guarded(Body&& body) {
  try {
    body();
  } catch (const UserError&) {
  } catch (const InternalError& e) {
    fail("InternalError escaped", e.what());
  } catch (const std::exception& e) {
    fail("unexpected exception", std::string(typeid(e).name()) + ": " + e.what());
  } catch (...) {
    fail("unexpected exception", "not a std::exception");
  }
}

// Runs a step that must not fail at all (a check on something kiln already accepted): any exception,
// a UserError included, is a finding.
template <class Body>
void must_succeed(const char* step, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    fail(step, std::string(typeid(e).name()) + ": " + e.what());
  } catch (...) {
    fail(step, "not a std::exception");
  }
}

// Small limits, so that a few bytes of input cannot ask for gigabytes (libFuzzer's rss limit is 2 GiB).
inline Options small_options() {
  Options o;
  o.max_tensor_bytes = int64_t{64} << 20;
  o.max_nodes = 10000;
  o.constant_fold_bytes = int64_t{16} << 20;
  o.threads = 1;
  return o;
}

// A folder of this process only, created on first use and removed at exit. `tag` names the target.
inline const std::filesystem::path& scratch_dir(const char* tag) {
  static const std::filesystem::path dir = [tag] {
    std::filesystem::path base = std::filesystem::temp_directory_path();
    std::string pattern = (base / (std::string("kiln-fuzz-") + tag + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) fail("cannot create a scratch folder", pattern);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(""), ec);
    });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

}  // namespace kiln::fuzz
