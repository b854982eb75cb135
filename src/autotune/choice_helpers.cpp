// See choice_helpers.h.
#include "autotune/choice_helpers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "support/error.h"

namespace kiln::autotune {
namespace {

class FunctionChoice : public Choice {
 public:
  explicit FunctionChoice(ChoiceFunctions f) : f_(std::move(f)) {}
  std::string name() const override { return f_.name; }
  void prepare() override {
    if (f_.prepare) f_.prepare();
  }
  void run() override { f_.run(); }
  bool check(std::string& why) override { return f_.check(why); }

 private:
  ChoiceFunctions f_;
};

template <class Want>
bool match(const float* got, const Want* want, size_t count, const Tolerance& tol, std::string& why) {
  double worst_excess = 0;  // error beyond the allowance, of the worst element
  size_t worst = count;
  for (size_t i = 0; i < count; ++i) {
    const double g = got[i], w = static_cast<double>(want[i]);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) && std::isnan(g)) continue;
      why = fmt::format("NaN mismatch at [{}]: got {}, want {}", i, g, w);
      return false;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g == w) continue;
      why = fmt::format("infinity mismatch at [{}]: got {}, want {}", i, g, w);
      return false;
    }
    const double excess = std::fabs(g - w) - (tol.atol + tol.rtol * std::fabs(w));
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (worst == count) return true;
  const double g = got[worst], w = static_cast<double>(want[worst]);
  why = fmt::format("max error {:.3g} at [{}]: got {}, want {} (atol {}, rtol {})", std::fabs(g - w), worst, g, w,
                    tol.atol, tol.rtol);
  return false;
}

constexpr uint32_t kGuardBits = 0x7fcadbadu;  // a quiet NaN with a payload no arithmetic produces

bool is_guard(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits == kGuardBits;
}

float guard_value() {
  float value;
  std::memcpy(&value, &kGuardBits, sizeof value);
  return value;
}

}  // namespace

GuardedBuffer::GuardedBuffer(size_t count, size_t guard_floats)
    : storage_(count + 2 * guard_floats), count_(count), guard_(guard_floats) {
  reset_guards();
}

void GuardedBuffer::reset_guards() {
  std::fill(storage_.begin(), storage_.begin() + static_cast<std::ptrdiff_t>(guard_), guard_value());
  std::fill(storage_.end() - static_cast<std::ptrdiff_t>(guard_), storage_.end(), guard_value());
}

bool GuardedBuffer::intact(std::string& why) const {
  // The changed element farthest from the output on each side: how far the candidate reached.
  for (size_t i = 0; i < guard_; ++i)
    if (!is_guard(storage_[i])) {
      why = fmt::format("wrote {} float(s) before the start of its output", guard_ - i);
      return false;
    }
  for (size_t i = storage_.size(); i-- > guard_ + count_;)
    if (!is_guard(storage_[i])) {
      why = fmt::format("wrote {} float(s) past the end of its output", i - guard_ - count_ + 1);
      return false;
    }
  return true;
}

std::unique_ptr<Choice> make_choice(ChoiceFunctions functions) {
  KILN_INTERNAL_CHECK(!functions.name.empty() && functions.run && functions.check,
                      "autotune: a choice needs a name, run and check ('{}')", functions.name);
  return std::make_unique<FunctionChoice>(std::move(functions));
}

bool outputs_match(const float* got, const float* want, size_t count, const Tolerance& tolerance, std::string& why) {
  return match(got, want, count, tolerance, why);
}

bool outputs_match(const float* got, const double* want, size_t count, const Tolerance& tolerance, std::string& why) {
  return match(got, want, count, tolerance, why);
}

}  // namespace kiln::autotune
