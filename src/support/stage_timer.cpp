#include "support/stage_timer.h"

#include <cstdio>

namespace kiln {

void StageTimer::print() const {
  if (!on_) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "# time %s: %.1f ms\n", name_.c_str(), ms);
}

StageTimer::~StageTimer() { print(); }

void StageTimer::next(std::string name) {
  print();
  name_ = std::move(name);
  start_ = std::chrono::steady_clock::now();
}

}  // namespace kiln
