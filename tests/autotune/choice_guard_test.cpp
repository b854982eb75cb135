// A candidate that crashes or hangs: the process dies naming it, and the next tune skips it.
#include <csignal>

#include "autotune/choice_guard.h"
#include "autotune_test_util.h"

namespace kiln::autotune::testing {
namespace {

FakeOp op_with(const std::string& bad_name, Behaviour bad) {
  FakeOp op("M=7");
  op.add(bad_name, 1, bad).add("fine", 5);
  return op;
}

void tune_quietly(const fs::path& db, Behaviour bad, const std::string& name, double hang_timeout_s) {
  Warnings w;
  Autotuner tuner(test_options(), db, w.sink());
  tuner.set_hang_timeout_s(hang_timeout_s);
  FakeOp op = op_with(name, bad);
  tuner.tune(op.request);
}

// The next tune in a healthy process: the culprit is skipped with a warning, the other one wins.
void expect_skipped_next_time(const fs::path& db, Behaviour bad, const std::string& name) {
  Warnings w;
  Autotuner tuner(test_options(), db, w.sink());
  FakeOp op = op_with(name, bad);
  TuneResult r = tuner.tune(op.request);
  EXPECT_EQ(r.winner, "fine");
  EXPECT_EQ(r.table[0].status, CandidateStatus::quarantined);
  EXPECT_EQ(op.calls[0]->prepare + op.calls[0]->check, 0);
  EXPECT_TRUE(w.any_contains("candidate '" + name + "'")) << (w.lines.empty() ? "" : w.lines[0]);
  EXPECT_TRUE(w.any_contains("crashed or hung"));
}

TEST(ChoiceGuardDeathTest, CrashInCheckNamesTheCandidate) {
  GTEST_FLAG_SET(death_test_style, "fast");
  TempDir dir;
  EXPECT_DEATH(tune_quietly(dir.db(), Behaviour::check_crashes, "crasher", 60),
               "fatal signal SIGSEGV in candidate 'crasher' of FakeGemm.*during check");
  expect_skipped_next_time(dir.db(), Behaviour::check_crashes, "crasher");
}

TEST(ChoiceGuardDeathTest, HangInCheckIsAbortedAndNamed) {
  GTEST_FLAG_SET(death_test_style, "fast");
  TempDir dir;
  EXPECT_DEATH(tune_quietly(dir.db(), Behaviour::check_hangs, "sleeper", 0.3),
               "candidate 'sleeper' of FakeGemm.*during check did not return within 0.3 s");
  expect_skipped_next_time(dir.db(), Behaviour::check_hangs, "sleeper");
}

TEST(ChoiceGuard, HandlersArePutBack) {
  struct sigaction before {}, after {};
  ASSERT_EQ(::sigaction(SIGSEGV, nullptr, &before), 0);
  {
    ChoiceGuard guard(10, nullptr);
    ChoiceGuard::Call call(guard, "x", "candidate 'x'");
    struct sigaction during {};
    ASSERT_EQ(::sigaction(SIGSEGV, nullptr, &during), 0);
    EXPECT_NE(during.sa_sigaction, before.sa_sigaction);
  }
  ASSERT_EQ(::sigaction(SIGSEGV, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  EXPECT_EQ(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);  // (glibc adds SA_RESTORER itself)
}

TEST(ChoiceGuard, ShortCallsDoNotTripTheWatchdog) {
  ChoiceGuard guard(0.05, [](const std::string&) { std::abort(); });
  for (int i = 0; i < 200; ++i) {
    ChoiceGuard::Call call(guard, "quick", "candidate 'quick'");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(120));  // idle time between calls does not count
  SUCCEED();
}

}  // namespace
}  // namespace kiln::autotune::testing
