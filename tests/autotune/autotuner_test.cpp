// The autotuner with synthetic choices: who wins, who is dropped, when nothing is benchmarked.
#include <cmath>
#include <functional>

#include "autotune_test_util.h"

namespace kiln::autotune::testing {
namespace {

// The usual line-up: slow default, a wrong one that would be fastest, one that cannot be built, and
// the fast one.
FakeOp usual_op(const std::string& shape = "M=4,K=8,N=16") {
  FakeOp op(shape);
  op.add("slow", 60).add("wrong", 0.2, Behaviour::wrong).add("throws", 0.1, Behaviour::prepare_throws_user).add("fast", 3);
  return op;
}

void ignore_warnings(const std::string&) {}

const CandidateTiming& row(const TuneResult& r, const std::string& name) {
  for (const CandidateTiming& t : r.table)
    if (t.name == name) return t;
  throw std::runtime_error("no row " + name);
}

TEST(Autotuner, FastWinsWrongNeverWinsThrowingIsDropped) {
  TempDir dir;
  Warnings w;
  Autotuner tuner(test_options(), dir.db(), w.sink());
  tuner.set_progress_stream(nullptr);
  FakeOp op = usual_op();
  TuneResult r = tuner.tune(op.request);
  EXPECT_EQ(r.winner, "fast");
  EXPECT_EQ(r.winner_index, 3u);
  EXPECT_EQ(r.source, TuneSource::benchmark);
  EXPECT_FALSE(r.from_db());
  EXPECT_EQ(tuner.benchmarks_run(), 1);

  EXPECT_EQ(row(r, "wrong").status, CandidateStatus::wrong);
  EXPECT_EQ(op.calls[1]->run, 0) << "a wrong choice is never timed";
  EXPECT_NE(row(r, "wrong").note.find("max abs error 1.5"), std::string::npos);
  EXPECT_EQ(row(r, "throws").status, CandidateStatus::failed);
  EXPECT_EQ(op.calls[2]->check, 0);
  EXPECT_EQ(row(r, "fast").status, CandidateStatus::timed);
  EXPECT_GT(row(r, "fast").calls, 0);
  EXPECT_GE(row(r, "fast").samples, limits_for(TuneMode::fast).min_rounds);
  EXPECT_GT(row(r, "slow").median_us, row(r, "fast").median_us);
  EXPECT_TRUE(w.any_contains("candidate 'throws'")) << "the warning names the dropped choice";
  EXPECT_TRUE(w.any_contains("test compiler not found"));
  EXPECT_TRUE(w.any_contains("candidate 'wrong'"));
  EXPECT_EQ(w.lines.size(), 2u);
  EXPECT_EQ(r.warnings, w.lines);
}

TEST(Autotuner, SecondTuneOfTheKeyRunsNoBenchmark) {
  TempDir dir;
  Warnings w;
  {
    Autotuner first(test_options(), dir.db(), w.sink());
    FakeOp op = usual_op();
    ASSERT_EQ(first.tune(op.request).winner, "fast");
    // The same tuner again: from the database.
    FakeOp again = usual_op();
    TuneResult r = first.tune(again.request);
    EXPECT_TRUE(r.from_db());
    EXPECT_EQ(first.benchmarks_run(), 1);
    EXPECT_EQ(again.total_runs(), 0);
  }
  // A new tuner, as the next process would have.
  Autotuner second(test_options(), dir.db(), w.sink());
  FakeOp op = usual_op();
  TuneResult r = second.tune(op.request);
  EXPECT_TRUE(r.from_db());
  EXPECT_EQ(r.winner, "fast");
  EXPECT_EQ(r.winner_index, 3u);
  EXPECT_EQ(second.benchmarks_run(), 0);
  EXPECT_EQ(second.database_hits(), 1);
  EXPECT_EQ(op.total_runs(), 0);
  EXPECT_EQ(op.total_checks(), 0);
  EXPECT_EQ(op.calls[3]->prepare, 1) << "the winner comes back prepared";
  EXPECT_EQ(op.calls[0]->prepare + op.calls[1]->prepare + op.calls[2]->prepare, 0);
  ASSERT_EQ(r.table.size(), 4u) << "the stored timings come back for the summary";
  EXPECT_GT(row(r, "fast").median_us, 0);
  EXPECT_EQ(row(r, "wrong").status, CandidateStatus::wrong);
  EXPECT_NE(second.summary_text().find("0 benchmarked, 1 from the database"), std::string::npos)
      << second.summary_text();
}

TEST(Autotuner, BudgetSpentFallsBackToTheDefault) {
  TempDir dir;
  Warnings w;
  Autotuner tuner(test_options("fast", 1e-6), dir.db(), w.sink());
  FakeOp first = usual_op("M=1");
  EXPECT_EQ(tuner.tune(first.request).winner, "fast") << "a tune that starts within the budget finishes";
  EXPECT_GT(tuner.budget_spent_s(), 1e-6);
  FakeOp second = usual_op("M=2");
  TuneResult r = tuner.tune(second.request);
  EXPECT_EQ(r.source, TuneSource::default_budget);
  EXPECT_EQ(r.winner, "slow") << "the default is the first choice";
  EXPECT_EQ(r.winner_index, 0u);
  EXPECT_EQ(second.total_runs(), 0);
  EXPECT_EQ(second.calls[0]->prepare, 1);
  EXPECT_TRUE(w.any_contains("budget")) << "said once";
  FakeOp third = usual_op("M=3");
  EXPECT_EQ(tuner.tune(third.request).source, TuneSource::default_budget);
  int budget_lines = 0;
  for (const std::string& l : w.lines) budget_lines += l.find("budget") != std::string::npos;
  EXPECT_EQ(budget_lines, 1);
  // A stored result still counts when the budget is gone.
  FakeOp known = usual_op("M=1");
  EXPECT_TRUE(tuner.tune(known.request).from_db());
  EXPECT_EQ(tuner.benchmarks_run(), 1);
  EXPECT_NE(tuner.summary_text().find("default (budget spent)"), std::string::npos);
}

TEST(Autotuner, ZeroBudgetAndOffRunNothing) {
  TempDir dir;
  Autotuner zero(test_options("fast", 0), dir.db(), ignore_warnings);
  FakeOp op = usual_op();
  EXPECT_EQ(zero.tune(op.request).source, TuneSource::default_budget);
  EXPECT_EQ(op.total_runs() + op.total_checks(), 0);

  Autotuner off(test_options("off"), dir.db(), ignore_warnings);
  FakeOp op2 = usual_op();
  TuneResult r = off.tune(op2.request);
  EXPECT_EQ(r.source, TuneSource::default_off);
  EXPECT_EQ(r.winner, "slow");
  EXPECT_EQ(op2.total_runs() + op2.total_checks(), 0);
  EXPECT_EQ(off.benchmarks_run(), 0);
  EXPECT_FALSE(fs::exists(dir.db())) << "off neither reads nor writes the database";
}

TEST(Autotuner, DefaultThatCannotBeBuiltGivesWayToTheNext) {
  FakeOp op;
  op.add("broken", 1, Behaviour::prepare_throws_user).add("plain", 1);
  Warnings w;
  Autotuner off_quiet(test_options("off"), "", w.sink());
  TuneResult r = off_quiet.tune(op.request);
  EXPECT_EQ(r.winner, "plain");
  EXPECT_EQ(r.winner_index, 1u);
  EXPECT_TRUE(w.any_contains("candidate 'broken'"));
}

TEST(Autotuner, KeysThatDifferAreDifferentEntries) {
  TempDir dir;
  Autotuner tuner(test_options(), dir.db(), ignore_warnings);
  FakeOp base = usual_op();
  tuner.tune(base.request);
  auto variants = std::vector<std::function<void(TuneRequest&)>>{
      [](TuneRequest& r) { r.device_key = "other cpu | avx2 | 8 threads"; },
      [](TuneRequest& r) { r.settings_key = "gemm_backends=template"; },
      [](TuneRequest& r) { r.library_versions = "fakelib 2.0"; },
      [](TuneRequest& r) { r.dtype = "bf16"; },
      [](TuneRequest& r) { r.shape_key = "M=5,K=8,N=16"; },
      [](TuneRequest& r) { r.op_signature += "+relu"; },
  };
  for (size_t i = 0; i < variants.size(); ++i) {
    FakeOp op = usual_op();
    variants[i](op.request);
    EXPECT_EQ(tuner.tune(op.request).source, TuneSource::benchmark) << "variant " << i;
    EXPECT_GT(op.total_runs(), 0);
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    FakeOp op = usual_op();
    variants[i](op.request);
    EXPECT_TRUE(tuner.tune(op.request).from_db()) << "variant " << i;
  }
  EXPECT_EQ(tuner.benchmarks_run(), 1 + static_cast<int>(variants.size()));
}

TEST(Autotuner, TuneAgainIgnoresAndReplacesTheStoredResult) {
  TempDir dir;
  {
    Autotuner max(test_options("max"), dir.db(), ignore_warnings);
    TuneLimits quick = limits_for(TuneMode::max);
    quick.target_s_per_choice = 0.01;
    max.set_limits(quick);
    FakeOp op;
    op.add("slow", 30).add("fast", 3);
    ASSERT_EQ(max.tune(op.request).winner, "fast");
  }
  Autotuner again(test_options("fast"), dir.db(), ignore_warnings);
  again.set_use_stored(false);
  FakeOp op;
  op.add("slow", 30).add("faster_now", 1);  // the stored winner is gone; the new one must be stored over max
  TuneResult r = again.tune(op.request);
  EXPECT_EQ(r.source, TuneSource::benchmark);
  FakeOp same;
  same.add("slow", 30).add("faster_now", 1);
  EXPECT_EQ(again.tune(same.request).source, TuneSource::benchmark) << "every tune benchmarks";
  Autotuner later(test_options("fast"), dir.db(), ignore_warnings);
  FakeOp check;
  check.add("slow", 30).add("faster_now", 1);
  TuneResult stored = later.tune(check.request);
  EXPECT_TRUE(stored.from_db());
  EXPECT_EQ(stored.winner, "faster_now") << "replaced the more thorough but stale max result";
}

TEST(Autotuner, StoredWinnerNoLongerOfferedIsTunedAgain) {
  TempDir dir;
  Autotuner tuner(test_options(), dir.db(), ignore_warnings);
  FakeOp op = usual_op();
  ASSERT_EQ(tuner.tune(op.request).winner, "fast");
  FakeOp fewer;
  fewer.add("slow", 60).add("medium", 10);
  TuneResult r = tuner.tune(fewer.request);
  EXPECT_EQ(r.source, TuneSource::benchmark);
  EXPECT_EQ(r.winner, "medium");
}

TEST(Autotuner, MaxModeWantsAThoroughMeasurement) {
  TempDir dir;
  {
    Autotuner fast(test_options("fast"), dir.db(), ignore_warnings);
    FakeOp op = usual_op();
    fast.tune(op.request);
  }
  Autotuner max(test_options("max"), dir.db(), ignore_warnings);
  TuneLimits quick = limits_for(TuneMode::max);
  quick.target_s_per_choice = 0.02;  // keep the test short; the mode is what is stored
  max.set_limits(quick);
  FakeOp op = usual_op();
  TuneResult r = max.tune(op.request);
  EXPECT_EQ(r.source, TuneSource::benchmark) << "a fast result does not satisfy max";
  EXPECT_EQ(r.winner, "fast");
  Autotuner fast_again(test_options("fast"), dir.db(), ignore_warnings);
  FakeOp op2 = usual_op();
  EXPECT_TRUE(fast_again.tune(op2.request).from_db()) << "a max result satisfies fast";
}

TEST(Autotuner, WithinTheTieMarginTheEarlierChoiceStays) {
  Autotuner tuner(test_options(), "", ignore_warnings);
  TuneLimits limits = limits_for(TuneMode::fast);
  limits.tie_margin = 0.9;
  limits.prune_factor = 100;  // both are timed in full
  tuner.set_limits(limits);
  FakeOp op;
  op.add("default", 12).add("a_bit_faster", 4);
  EXPECT_EQ(tuner.tune(op.request).winner, "default");
  limits.tie_margin = 0;
  tuner.set_limits(limits);
  FakeOp again("M=other");
  again.add("default", 12).add("a_bit_faster", 4);
  EXPECT_EQ(tuner.tune(again.request).winner, "a_bit_faster");
}

TEST(Autotuner, ChoiceWhoseRunThrowsIsDroppedDuringTiming) {
  Warnings w;
  Autotuner tuner(test_options(), "", w.sink());
  FakeOp op;
  op.add("flaky", 0.1, Behaviour::run_throws).add("steady", 5);
  TuneResult r = tuner.tune(op.request);
  EXPECT_EQ(r.winner, "steady");
  EXPECT_EQ(row(r, "flaky").status, CandidateStatus::failed);
  EXPECT_TRUE(w.any_contains("candidate 'flaky'"));
}

TEST(Autotuner, NoWorkingChoiceIsAnError) {
  Warnings w;
  Autotuner tuner(test_options(), "", w.sink());
  FakeOp users;
  users.add("a", 1, Behaviour::prepare_throws_user).add("b", 1, Behaviour::prepare_throws_user);
  EXPECT_THROW(tuner.tune(users.request), UserError);
  FakeOp bugs;
  bugs.add("a", 1, Behaviour::prepare_throws_user).add("b", 1, Behaviour::wrong);
  try {
    tuner.tune(bugs.request);
    FAIL() << "no error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("b: wrong result"), std::string::npos) << e.what();
  }
  FakeOp duplicate;
  duplicate.add("same", 1).add("same", 2);
  EXPECT_THROW(tuner.tune(duplicate.request), InternalError);
}

TEST(Autotuner, SettingsAreValidated) {
  EXPECT_THROW(Autotuner(test_options("sometimes"), ""), UserError);
  EXPECT_THROW(Autotuner(test_options("fast", -1), ""), UserError);
  EXPECT_THROW(Autotuner(test_options("fast", std::nan("")), ""), UserError);
  Options o;
  EXPECT_EQ(o.autotune, "fast");
  EXPECT_EQ(gemm_backends(o), (std::vector<std::string>{"template", "onednn", "blas"}));
  o.set("gemm_backends", "onednn");
  EXPECT_EQ(gemm_backends(o), std::vector<std::string>{"onednn"});
  o.set("gemm_backends", "blas,template");
  EXPECT_EQ(gemm_backends(o), (std::vector<std::string>{"blas", "template"}));
  for (const char* bad : {"", "template,", "mkl", "onednn,onednn", "template,,blas", "blas,", "openblas"}) {
    o.gemm_backends = bad;
    EXPECT_THROW(gemm_backends(o), UserError) << bad;
  }
  o.gemm_backends = "onednn,template";
  EXPECT_NE(gemm_settings_key(o).find("gemm_backends=onednn,template;"), std::string::npos) << gemm_settings_key(o);
  EXPECT_NE(gemm_settings_key(o).find(o.code_key()), std::string::npos);
  o.set("autotune_budget_s", "2.5");
  EXPECT_EQ(o.autotune_budget_s, 2.5);
  o.set("autotune", "off");
  EXPECT_EQ(autotune_mode(o), TuneMode::off);
}

TEST(Autotuner, SummaryTextAndJson) {
  Autotuner tuner(test_options(), "", ignore_warnings);
  FakeOp op = usual_op();
  tuner.tune(op.request);
  const std::string text = tuner.summary_text();
  EXPECT_NE(text.find("1 benchmarked"), std::string::npos) << text;
  EXPECT_NE(text.find("* fast"), std::string::npos) << text;
  EXPECT_NE(text.find("wrong: wrong result"), std::string::npos) << text;
  nlohmann::json j = tuner.summary_json();
  ASSERT_EQ(j["ops"].size(), 1u);
  EXPECT_EQ(j["ops"][0]["winner"], "fast");
  EXPECT_EQ(j["ops"][0]["source"], "benchmark");
  EXPECT_EQ(j["ops"][0]["candidates"][3]["status"], "timed");
  EXPECT_GT(j["ops"][0]["candidates"][3]["median_us"].get<double>(), 0);
  EXPECT_EQ(j["ops"][0]["candidates"].size(), 4u);
  EXPECT_EQ(j["benchmarks_run"], 1);
  // The stored form reads back.
  auto table = timings_from_json(timings_to_json(tuner.results()[0].table));
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[3].name, "fast");
  EXPECT_EQ(table[3].median_us, tuner.results()[0].table[3].median_us);
  EXPECT_TRUE(timings_from_json("{not json").empty());
  // Counts out of an integer's range (a damaged store; found by fuzz_tuning_store) read as 0, not UB.
  const auto damaged = timings_from_json(
      R"([{"name":"a","samples":1e21,"calls":-3},{"name":"b","samples":7,"calls":1e300}])");
  ASSERT_EQ(damaged.size(), 2u);
  EXPECT_EQ(damaged[0].samples, 0);
  EXPECT_EQ(damaged[0].calls, 0);
  EXPECT_EQ(damaged[1].samples, 7);
  EXPECT_EQ(damaged[1].calls, 0);
  // Fields of the wrong type (found by CI's fuzz_tuning_store) read as absent.
  const auto mistyped = timings_from_json(R"([{"name":"a","status":3,"note":7,"median_us":"fast"}])");
  ASSERT_EQ(mistyped.size(), 1u);
  EXPECT_EQ(mistyped[0].status, CandidateTiming{}.status);
  EXPECT_EQ(mistyped[0].note, "");
  EXPECT_EQ(mistyped[0].median_us, 0.0);
}

}  // namespace
}  // namespace kiln::autotune::testing
