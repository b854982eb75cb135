// Several processes tuning the same key at once, and attempt markers of a process that is alive.
#include <sys/wait.h>
#include <unistd.h>

#include "autotune_test_util.h"
#include "common/processes.h"

namespace kiln::autotune::testing {
namespace {

void ignore_warnings(const std::string&) {}

FakeOp two_choices() {
  FakeOp op("M=33");
  op.add("slow", 40).add("fast", 4);
  return op;
}

TEST(ConcurrentTune, ProcessesTuningTheSameKeyAllSucceed) {
  TempDir dir;
  const std::vector<int> statuses = test_common::run_children_together(3, [&](int) {
    Autotuner tuner(test_options(), dir.db(), ignore_warnings);
    FakeOp op = two_choices();
    TuneResult r = tuner.tune(op.request);
    return r.winner == "fast" && r.warnings.empty() ? 0 : 2;
  });
  for (int status : statuses) EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  Warnings w;
  Autotuner after(test_options(), dir.db(), w.sink());
  FakeOp op = two_choices();
  TuneResult r = after.tune(op.request);
  EXPECT_TRUE(r.from_db());
  EXPECT_EQ(r.winner, "fast");
  EXPECT_TRUE(w.lines.empty()) << "no process left a marker behind";
}

TEST(ConcurrentTune, ChoiceBeingCheckedElsewhereIsNotSkipped) {
  TempDir dir;
  int hold[2];
  int ready[2];
  ASSERT_EQ(::pipe(hold), 0);
  ASSERT_EQ(::pipe(ready), 0);
  std::fflush(nullptr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: "checking" slow right now, until the parent is done.
    ::close(hold[1]);
    TuningStore store(dir.db(), ignore_warnings);
    FakeOp op = two_choices();
    TuningKey key{op.request.op_signature, op.request.shape_key,        op.request.dtype,
                  op.request.device_key,   op.request.library_versions, op.request.settings_key};
    bool marked = store.mark_attempt(key, "slow");
    char byte = marked ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    while (::read(hold[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(hold[0]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_EQ(byte, 'y');
  Warnings w;
  Autotuner tuner(test_options(), dir.db(), w.sink());
  FakeOp op = two_choices();
  TuneResult r = tuner.tune(op.request);
  ::close(hold[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(r.winner, "fast");
  EXPECT_NE(r.table[0].status, CandidateStatus::quarantined);
  EXPECT_GT(op.calls[0]->check, 0);
  EXPECT_TRUE(w.lines.empty()) << w.lines[0];
}

}  // namespace
}  // namespace kiln::autotune::testing
