// Conveniences for callers of the autotuner: a Choice made of functions, and the output comparison
// a check() needs.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autotune/autotuner.h"

namespace kiln::autotune {

// A choice from three functions (prepare may be empty: nothing to build).
struct ChoiceFunctions {
  std::string name;
  std::function<void()> prepare;
  std::function<void()> run;
  std::function<bool(std::string& why)> check;
};
std::unique_ptr<Choice> make_choice(ChoiceFunctions functions);

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
};

// True if every got[i] is within atol + rtol * |want[i]| of want[i], where NaN must meet NaN and an
// infinity the same infinity. Otherwise false and `why` names the worst element ("max error 0.5 at
// [17]: got 1.5, want 1") or the first NaN / infinity mismatch.
bool outputs_match(const float* got, const float* want, size_t count, const Tolerance& tolerance, std::string& why);
bool outputs_match(const float* got, const double* want, size_t count, const Tolerance& tolerance, std::string& why);

// A float buffer with guard zones before and after it, filled with a marker bit pattern: a candidate
// that writes past either end of its output (the classic edge-tile bug of a generated kernel) is
// caught by intact() in its check, before it can win, instead of corrupting the heap unseen.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t count, size_t guard_floats = 256);
  float* data() { return storage_.data() + guard_; }
  const float* data() const { return storage_.data() + guard_; }
  size_t size() const { return count_; }
  // True if both guard zones still hold the marker; else false and `why` names the first changed
  // element ("wrote 3 floats before the start" / "... after the end").
  bool intact(std::string& why) const;
  void reset_guards();

 private:
  std::vector<float> storage_;
  size_t count_, guard_;
};

}  // namespace kiln::autotune
