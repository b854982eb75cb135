// Wall time of the stages of a compile or a load, printed to stderr under KILN_DEBUG=time: where a
// prepare spends its time, without a profiler.
#pragma once
#include <chrono>
#include <string>

#include "kiln/options.h"

namespace kiln {

class StageTimer {
 public:
  // Prints "# time NAME: X ms" when it goes, if the `time` channel is on.
  StageTimer(const Options& options, std::string name)
      : on_(options.debug_on("time")), name_(std::move(name)), start_(std::chrono::steady_clock::now()) {}
  ~StageTimer();
  // Ends this stage (printing its time) and starts the stage `name`.
  void next(std::string name);
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  void print() const;

  bool on_;
  std::string name_;
  std::chrono::steady_clock::time_point start_;
};

// f(), timed as the stage `name`.
template <class F>
decltype(auto) timed(const Options& options, std::string name, F&& f) {
  const StageTimer timer(options, std::move(name));
  return f();
}

}  // namespace kiln
