// Shared helpers for the autotuner tests: a private temporary folder and synthetic choices.
#pragma once
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/mman.h>

#include "autotune/autotuner.h"
#include "common/temp_dir.h"
#include "kiln/errors.h"

namespace kiln::autotune::testing {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed at the end of the test. The database goes in a
// sub-folder that kiln creates.
class TempDir : public ::kiln::test_common::TempDir {
 public:
  TempDir() : ::kiln::test_common::TempDir("kiln-autotune-test") {}
  fs::path db() const { return root() / "cache" / kTuningStoreFileName; }
};

// What a synthetic choice was asked to do, shared with the test after the request owns the choice.
struct Calls {
  int prepare = 0;
  int check = 0;
  int run = 0;
};

enum class Behaviour { right, wrong, prepare_throws_user, prepare_throws_internal, run_throws, check_crashes, check_hangs };

// Spins (no sleep: sleeping would make it look idle, not slow) for `run_us` per run().
class FakeChoice : public Choice {
 public:
  FakeChoice(std::string name, double run_us, Behaviour behaviour, std::shared_ptr<Calls> calls)
      : name_(std::move(name)), run_us_(run_us), behaviour_(behaviour), calls_(std::move(calls)) {}
  std::string name() const override { return name_; }
  void prepare() override {
    ++calls_->prepare;
    if (behaviour_ == Behaviour::prepare_throws_user) throw UserError("test compiler not found");
    if (behaviour_ == Behaviour::prepare_throws_internal) throw InternalError("test template bug");
  }
  void run() override {
    ++calls_->run;
    if (behaviour_ == Behaviour::run_throws) throw std::runtime_error("test run failure");
    spin();
  }
  bool check(std::string& why) override {
    ++calls_->check;
    if (behaviour_ == Behaviour::check_crashes) {
      // A store to a page mapped without access: SIGSEGV under every build. (A store through a null
      // pointer is reported and stopped by UBSan before the signal is raised.)
      void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (page == MAP_FAILED) throw std::runtime_error("test crasher: mmap failed");
      *static_cast<volatile int*>(page) = 1;
    }
    if (behaviour_ == Behaviour::check_hangs) std::this_thread::sleep_for(std::chrono::seconds(60));
    spin();
    if (behaviour_ == Behaviour::wrong) {
      why = "max abs error 1.5 at [3]";
      return false;
    }
    return true;
  }

 private:
  void spin() const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(run_us_ * 1e3));
    while (std::chrono::steady_clock::now() < end) {
    }
  }
  std::string name_;
  double run_us_;
  Behaviour behaviour_;
  std::shared_ptr<Calls> calls_;
};

// A request for one synthetic op; add choices with add().
struct FakeOp {
  TuneRequest request;
  std::vector<std::shared_ptr<Calls>> calls;

  explicit FakeOp(std::string shape = "M=4,K=8,N=16") {
    request.op_signature = "FakeGemm(A[M,K],B[K,N])";
    request.shape_key = std::move(shape);
    request.dtype = "f32";
    request.device_key = "test cpu | avx512 | 2 threads";
    request.library_versions = "fakelib 1.0";
    request.settings_key = "gemm_backends=template,onednn";
  }
  FakeOp& add(const std::string& name, double run_us, Behaviour behaviour = Behaviour::right) {
    calls.push_back(std::make_shared<Calls>());
    request.choices.push_back(std::make_unique<FakeChoice>(name, run_us, behaviour, calls.back()));
    return *this;
  }
  int total_runs() const {
    int n = 0;
    for (const auto& c : calls) n += c->run;
    return n;
  }
  int total_checks() const {
    int n = 0;
    for (const auto& c : calls) n += c->check;
    return n;
  }
};

// Options for a test: autotune=fast, the given budget.
inline Options test_options(const std::string& mode = "fast", double budget_s = 30) {
  Options o;
  o.autotune = mode;
  o.autotune_budget_s = budget_s;
  return o;
}

// Collects warnings instead of printing them.
struct Warnings {
  std::vector<std::string> lines;
  WarnSink sink() {
    return [this](const std::string& line) { lines.push_back(line); };
  }
  bool any_contains(const std::string& text) const {
    for (const std::string& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
};

}  // namespace kiln::autotune::testing
