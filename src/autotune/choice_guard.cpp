// See choice_guard.h.
#include "autotune/choice_guard.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln::autotune {
namespace {

constexpr int kFatalSignals[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr size_t kAltStackBytes = 64 * 1024;

// Process-wide: what the handler prints and what it puts back. Constant-initialised, no constructors run.
std::mutex g_one_guard;
std::atomic<const char*> g_crash_note{nullptr};
struct sigaction g_previous[4];

void write_text(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "?";
  }
}

// Async-signal-safe: write(2), sigaction(2) and raise(3) only.
void on_fatal_signal(int sig, siginfo_t* info, void*) {
  if (const char* note = g_crash_note.load()) {
    write_text("\nkiln autotune: fatal signal ");
    write_text(signal_name(sig));
    write_text(" in ");
    write_text(note);
    write_text("\n");
  }
  for (int i = 0; i < 4; ++i)
    if (kFatalSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  // A fault returns to the faulting instruction, which faults again under the old action; a signal
  // sent by kill or raise is sent once more (it stays pending until this handler returns).
  if (info == nullptr || info->si_code <= 0) ::raise(sig);
}

}  // namespace

ChoiceGuard::ChoiceGuard(double hang_timeout_s, std::function<void(const std::string&)> on_hang)
    : hang_timeout_s_(hang_timeout_s), on_hang_(std::move(on_hang)), exclusive_(g_one_guard) {
  alt_stack_ = std::malloc(kAltStackBytes);
  if (alt_stack_) {
    // So that a stack overflow inside a candidate still gets its message.
    stack_t ss{};
    ss.ss_sp = alt_stack_;
    ss.ss_size = kAltStackBytes;
    alt_stack_set_ = ::sigaltstack(&ss, nullptr) == 0;
  }
  struct sigaction action {};
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 4; ++i) ::sigaction(kFatalSignals[i], &action, &g_previous[i]);
  watchdog_ = std::thread([this] { watch(); });
}

ChoiceGuard::~ChoiceGuard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  watchdog_.join();
  g_crash_note.store(nullptr);
  for (int i = 0; i < 4; ++i) ::sigaction(kFatalSignals[i], &g_previous[i], nullptr);
  if (alt_stack_set_) {
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
  }
  std::free(alt_stack_);
}

void ChoiceGuard::watch() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (current_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const unsigned long generation = generation_;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(hang_timeout_s_));
    if (changed_.wait_until(lock, deadline, [&] { return stop_ || generation_ != generation; })) continue;
    // The call is still running past its limit: report, let the owner record it, and end the process
    // (a hung candidate cannot be interrupted safely).
    const std::string what = current_;
    const std::string choice = current_choice_;
    lock.unlock();
    std::fprintf(stderr, "\nkiln autotune: %s did not return within %g s; aborting\n", what.c_str(), hang_timeout_s_);
    std::fflush(stderr);
    try {
      if (on_hang_) on_hang_(choice);
    } catch (...) {
    }
    std::fflush(nullptr);
    std::abort();
  }
}

ChoiceGuard::Call::Call(ChoiceGuard& guard, const std::string& choice, const std::string& what) : guard_(guard) {
  std::lock_guard<std::mutex> lock(guard_.mutex_);
  // Write the slot the handler is not pointed at, then point it there.
  guard_.note_slot_ ^= 1;
  guard_.crash_note_[guard_.note_slot_] = what;
  g_crash_note.store(guard_.crash_note_[guard_.note_slot_].c_str());
  guard_.current_ = what;
  guard_.current_choice_ = choice;
  ++guard_.generation_;
  guard_.changed_.notify_all();
}

ChoiceGuard::Call::~Call() {
  std::lock_guard<std::mutex> lock(guard_.mutex_);
  g_crash_note.store(nullptr);
  guard_.current_.clear();
  ++guard_.generation_;
  guard_.changed_.notify_all();
}

}  // namespace kiln::autotune
