// The autotuner's measurement: warm-up, then interleaved timed rounds (see autotuner.h, step 4).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autotune/autotuner.h"
#include "autotune/choice_guard.h"

namespace kiln::autotune {

struct Contender {
  Choice* choice = nullptr;
  CandidateTiming* timing = nullptr;  // filled in: median_us, min_us, samples, calls, status pruned
  std::string what;                   // "candidate 'X' of <op> <shape>" for the guard's messages
};

struct BenchHooks {
  std::function<bool()> out_of_budget;                 // true: stop after the minimum rounds
  std::function<void(const std::string&)> progress;    // one short status line
};

// Warms up and times `contenders` (already prepared and checked). A run() that throws drops its
// contender (status failed, note set) and is reported through the returned warnings.
std::vector<std::string> time_interleaved(std::vector<Contender>& contenders, const TuneLimits& limits,
                                          ChoiceGuard& guard, const BenchHooks& hooks);

// The median of `values` (not empty); sorts them.
double median_of(std::vector<double>& values);

}  // namespace kiln::autotune
