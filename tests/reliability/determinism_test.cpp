// Determinism: at a fixed thread count, a compiled session gives the same bits on every run.
// (Which results change with the thread count is written up in docs/RELIABILITY.md.)
#include <gtest/gtest.h>
#include <omp.h>

#include "reliability_util.h"

namespace kiln::reliability {
namespace {

constexpr int kRuns = 100;

// Restores the calling thread's OpenMP thread count (the ICV Session::run reads) when it goes away.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ScopedOmpThreads() { omp_set_num_threads(saved_); }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int saved_;
};

void expect_same_bits_every_run(const Session& s, const Inputs& in) {
  Outputs first = s.run(in);
  int differing = 0;
  std::string first_diff;
  for (int r = 1; r < kRuns; ++r) {
    std::string diff = bit_difference(first, s.run(in));
    if (!diff.empty() && differing++ == 0) first_diff = "run " + std::to_string(r) + ": " + diff;
  }
  EXPECT_EQ(differing, 0) << differing << " of " << kRuns - 1 << " runs differed from the first; " << first_diff;
}

TEST(Determinism, CompiledDemoHundredRuns) {
  Session s = demo_session(Mode::compiled);
  expect_same_bits_every_run(s, distinct_inputs(s, 1)[0]);
}

// Two threads per kernel even on a 1-core machine, so that the parallel paths (and oneDNN's
// threading) run.
TEST(Determinism, CompiledDemoHundredRunsTwoThreads) {
  ScopedOmpThreads threads(2);
  Session s = demo_session(Mode::compiled);
  expect_same_bits_every_run(s, distinct_inputs(s, 1)[0]);
}

TEST(Determinism, EagerDemoHundredRuns) {
  Session s = demo_session(Mode::eager);
  expect_same_bits_every_run(s, distinct_inputs(s, 1)[0]);
}

// A second session of the same model (kernels from the cache, weights reordered again) gives the
// same bits as the first.
TEST(Determinism, FreshSessionSameBits) {
  Session a = demo_session(Mode::compiled);
  Session b = demo_session(Mode::compiled);
  Inputs in = distinct_inputs(a, 1)[0];
  EXPECT_EQ(bit_difference(a.run(in), b.run(in)), "");
}

}  // namespace
}  // namespace kiln::reliability
