// One Session, many threads: Session::run is const and must give every caller exactly what a serial
// run gives (each run leases its own arena; generated kernels and library calls keep no per-run state).
//
// KILN_STRESS_RUNS sets the runs per thread (default 40: a few seconds on 2 cores; the acceptance run
// uses 1000, see docs/RELIABILITY.md).
#include <atomic>
#include <barrier>
#include <gtest/gtest.h>
#include <mutex>
#include <random>
#include <thread>

#include "reliability_util.h"

namespace kiln::reliability {
namespace {

constexpr int kThreads = 8;
constexpr int kDistinctInputs = 4;

int runs_per_thread() { return env_count("KILN_STRESS_RUNS", 40); }

// Runs `s` from kThreads threads at once, `runs` times each, cycling through `inputs` (each thread
// from a different starting point, so that different inputs are in flight together), and compares
// every result bit for bit with `expected`. Returns the number of runs that differed or threw.
struct StressResult {
  int bad_runs = 0;
  std::string first_problem;
};
StressResult stress(const Session& s, const std::vector<Inputs>& inputs, const std::vector<Outputs>& expected,
                    int runs) {
  std::atomic<int> bad{0};
  std::mutex problem_mutex;
  std::string first_problem;
  auto note = [&](const std::string& what) {
    bad.fetch_add(1);
    std::lock_guard lock(problem_mutex);
    if (first_problem.empty()) first_problem = what;
  };
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < runs; ++r) {
        size_t which = static_cast<size_t>(t + r) % inputs.size();
        try {
          std::string diff = bit_difference(expected[which], s.run(inputs[which]));
          if (!diff.empty()) note("thread " + std::to_string(t) + " run " + std::to_string(r) + " input " +
                                  std::to_string(which) + ": " + diff);
        } catch (const std::exception& e) {
          note("thread " + std::to_string(t) + " run " + std::to_string(r) + " threw: " + e.what());
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  return {bad.load(), first_problem};
}

// Serial references for each input; they must differ from one another, or a run handed another
// run's result would go unnoticed.
std::vector<Outputs> serial_references(const Session& s, const std::vector<Inputs>& inputs) {
  std::vector<Outputs> refs;
  for (const Inputs& in : inputs) refs.push_back(s.run(in));
  for (size_t i = 0; i < refs.size(); ++i)
    for (size_t j = i + 1; j < refs.size(); ++j)
      EXPECT_NE(bit_difference(refs[i], refs[j]), "") << "inputs " << i << " and " << j << " give equal outputs";
  return refs;
}

void expect_thread_safe(const Session& s, const std::vector<Inputs>& inputs) {
  std::vector<Outputs> refs = serial_references(s, inputs);
  const int runs = runs_per_thread();
  StressResult r = stress(s, inputs, refs, runs);
  EXPECT_EQ(r.bad_runs, 0) << r.bad_runs << " of " << kThreads * runs << " runs differed; first: " << r.first_problem;
  // The serial result is unchanged after the storm (nothing the threads did stuck to the session).
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(bit_difference(refs[i], s.run(inputs[i])), "") << "input " << i;
}

// The check itself can fail: with the references rotated by one, every run must count as differing.
TEST(SessionConcurrency, StressNoticesWrongResults) {
  Session s = demo_session(Mode::eager);
  std::vector<Inputs> inputs = distinct_inputs(s, 2);
  std::vector<Outputs> refs = serial_references(s, inputs);
  std::swap(refs[0], refs[1]);
  StressResult r = stress(s, inputs, refs, 2);
  EXPECT_EQ(r.bad_runs, kThreads * 2);
  EXPECT_NE(r.first_problem.find("differs first at byte"), std::string::npos) << r.first_problem;
}

TEST(SessionConcurrency, CompiledDemoEightThreads) {
  Session s = demo_session(Mode::compiled);
  ASSERT_GT(s.stats().fused_kernels, 0) << "the demo must run generated kernels";
  ASSERT_GT(s.stats().library_kernels, 0) << "the demo must run library calls";
  ASSERT_GT(s.stats().arena_bytes, 0) << "the demo must lease arenas";
  expect_thread_safe(s, distinct_inputs(s, kDistinctInputs));
}

TEST(SessionConcurrency, EagerDemoEightThreads) {
  Session s = demo_session(Mode::eager);
  expect_thread_safe(s, distinct_inputs(s, kDistinctInputs));
}

// Token ids of shape [1, seq] for the demo with its seq left symbolic.
Inputs ids_of_length(int64_t seq, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(seq));
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % 1000);
  return {{"input_ids", Tensor::from_vector<int64_t>(DType::i64, {1, seq}, ids)}};
}

// seq left symbolic: runs of different lengths in flight at once share the kernels (which take their
// sizes per call) and the session's arena pool (arenas sized at run time, or none).
TEST(SessionConcurrency, CompiledDemoMixedSequenceLengths) {
  Session s = Session::from_graph(demo_transformer(), Mode::compiled, demo_options(), {{"batch", 1}});
  std::vector<Inputs> inputs = {ids_of_length(8, 1), ids_of_length(13, 2), ids_of_length(5, 3), ids_of_length(8, 4)};
  expect_thread_safe(s, inputs);
}

// Several sessions of the same model (sharing the loaded kernel objects through the cache) run from
// many threads at once, each checked against its own serial result.
TEST(SessionConcurrency, TwoSessionsSameKernels) {
  Session a = demo_session(Mode::compiled);
  Session b = demo_session(Mode::compiled);
  std::vector<Inputs> inputs = distinct_inputs(a, 2);
  std::vector<Outputs> refs = serial_references(a, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) ASSERT_EQ(bit_difference(refs[i], b.run(inputs[i])), "");
  const int runs = std::max(1, runs_per_thread() / 4);
  StressResult ra, rb;
  std::thread other([&] { rb = stress(b, inputs, refs, runs); });
  ra = stress(a, inputs, refs, runs);
  other.join();
  EXPECT_EQ(ra.bad_runs, 0) << ra.first_problem;
  EXPECT_EQ(rb.bad_runs, 0) << rb.first_problem;
}

// For scripts/tsan.sh only (disabled elsewhere): a deliberate data race, which a TSan build must
// report, so that a clean TSan run is known to have checked something.
TEST(TsanCanary, DISABLED_DataRace) {
  int shared = 0;
  std::barrier start(2);
  auto bump = [&] {
    start.arrive_and_wait();
    for (int i = 0; i < 1000; ++i) shared = shared + 1;
  };
  std::thread a(bump), b(bump);
  a.join();
  b.join();
  EXPECT_GT(shared, 0);
}

// The same inside an OpenMP region: tsan.supp's entries for the OpenMP runtime must not hide a race
// in code that runs on its threads.
TEST(TsanCanary, DISABLED_OpenMpDataRace) {
  int shared = 0;
#pragma omp parallel num_threads(2)
  for (int i = 0; i < 1000; ++i) shared = shared + 1;
  EXPECT_GT(shared, 0);
}

}  // namespace
}  // namespace kiln::reliability
