// Protection while the autotuner calls into a candidate it has never run before (a freshly generated
// kernel, a library on an odd shape): a crash or a hang there must at least say which candidate it was.
//
// Why not run candidates in a forked child: the process has usually run OpenMP (libgomp) parallel
// regions already (eager ops, oneDNN), and a forked child that enters OpenMP again can deadlock on the
// parent's thread pool, which does not exist in the child; GEMM candidates are OpenMP code. A child
// made by fork + exec would have to rebuild the model's state. So candidates run in-process, guarded:
//   - a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL) in any thread while a candidate runs prints
//     "kiln autotune: fatal signal ... in candidate 'X' ..." and then dies of the signal as before
//     (the previous handler is put back and the signal delivered again, so core dumps and sanitizer
//     reports still happen);
//   - a watchdog thread aborts with a message naming the candidate when one call does not return
//     within the time limit, after running an `on_hang` hook (the autotuner records the candidate in
//     the tuning database there, so the next run skips it).
#pragma once
#include <condition_variable>
#include <csignal>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace kiln::autotune {

class ChoiceGuard {
 public:
  // Installs the signal handlers (restored by the destructor) and starts the watchdog. One guard at a
  // time per process: a second one waits for the first to go.
  // `on_hang` gets the hung call's `choice`.
  ChoiceGuard(double hang_timeout_s, std::function<void(const std::string& choice)> on_hang);
  ~ChoiceGuard();
  ChoiceGuard(const ChoiceGuard&) = delete;
  ChoiceGuard& operator=(const ChoiceGuard&) = delete;

  // Scope of one call into candidate `choice`; `what` says it in words for the messages
  // ("candidate 'X' of <op> <shape> during check").
  class Call {
   public:
    Call(ChoiceGuard& guard, const std::string& choice, const std::string& what);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    ChoiceGuard& guard_;
  };

 private:
  void watch();

  double hang_timeout_s_;
  std::function<void(const std::string&)> on_hang_;
  std::unique_lock<std::mutex> exclusive_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string current_;  // what is running; empty between calls
  std::string current_choice_;
  std::string crash_note_[2];  // read by the signal handler: the one it points at is never written
  int note_slot_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
  struct sigaction previous_[4] = {};
  void* alt_stack_ = nullptr;
  bool alt_stack_set_ = false;
  std::thread watchdog_;
};

}  // namespace kiln::autotune
