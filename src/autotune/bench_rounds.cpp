// Interleaved timing of the autotuner's candidates (see bench_rounds.h).
#include "autotune/bench_rounds.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace kiln::autotune {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Plan {
  std::vector<double> samples_us;  // per-call time of each timed batch
  int rounds = 0;
  int64_t batch = 1;
  int64_t calls = 0;
  bool active = true;
  std::string warmup_what, timing_what;
};

void drop(Contender& c, Plan& p, const std::exception& e, std::vector<std::string>& warnings) {
  p.active = false;
  c.timing->status = CandidateStatus::failed;
  c.timing->note = fmt::format("run failed: {}", e.what());
  warnings.push_back(fmt::format("{} dropped: run failed: {}", c.what, e.what()));
}

}  // namespace

double median_of(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<std::string> time_interleaved(std::vector<Contender>& contenders, const TuneLimits& limits,
                                          ChoiceGuard& guard, const BenchHooks& hooks) {
  std::vector<std::string> warnings;
  std::vector<Plan> plans(contenders.size());
  const int min_rounds = std::max(1, limits.min_rounds);
  const int max_rounds = std::max(min_rounds, limits.max_rounds);

  // Warm-up: caches, page faults and lazy initialisation out of the way; the calls also give the
  // first estimate of a call's time, which sizes the rounds and batches.
  int total_rounds = 0;
  for (size_t i = 0; i < contenders.size(); ++i) {
    Contender& c = contenders[i];
    Plan& p = plans[i];
    p.warmup_what = c.what + " during warm-up";
    p.timing_what = c.what + " during timing";
    const std::string name = c.choice->name();
    if (hooks.progress) hooks.progress(fmt::format("warming up {}", name));
    double per_call_s = 0;
    try {
      ChoiceGuard::Call call(guard, name, p.warmup_what);
      const Clock::time_point start = Clock::now();
      int64_t calls = 0;
      do {
        c.choice->run();
        ++calls;
      } while (seconds_since(start) < limits.warmup_s && calls < 1000000);
      per_call_s = std::max(seconds_since(start) / static_cast<double>(calls), 1e-9);
    } catch (const std::exception& e) {
      drop(c, p, e, warnings);
      continue;
    }
    const double fits = limits.target_s_per_choice / per_call_s;
    p.rounds = static_cast<int>(std::clamp(fits, static_cast<double>(min_rounds), static_cast<double>(max_rounds)));
    p.batch = std::max<int64_t>(1, std::llround(fits / p.rounds));
    total_rounds = std::max(total_rounds, p.rounds);
  }

  auto median_us = [&](size_t i) {
    std::vector<double> copy = plans[i].samples_us;
    return median_of(copy);
  };

  for (int round = 0; round < total_rounds; ++round) {
    // Each round visits the choices in a rotated order, so none is always first after a pause.
    const size_t n = contenders.size();
    bool any = false;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (k + static_cast<size_t>(round)) % n;
      Plan& p = plans[i];
      if (!p.active || static_cast<int>(p.samples_us.size()) >= p.rounds) continue;
      any = true;
      Contender& c = contenders[i];
      try {
        ChoiceGuard::Call call(guard, c.choice->name(), p.timing_what);
        const Clock::time_point start = Clock::now();
        for (int64_t b = 0; b < p.batch; ++b) c.choice->run();
        p.samples_us.push_back(seconds_since(start) * 1e6 / static_cast<double>(p.batch));
        p.calls += p.batch;
      } catch (const std::exception& e) {
        drop(c, p, e, warnings);
      }
    }
    if (!any) break;
    if (hooks.progress) hooks.progress(fmt::format("round {}/{}", round + 1, total_rounds));
    if (round + 1 < min_rounds) continue;
    // Far behind the best even in its best batch: more samples would not change the decision. (The
    // minimum, not the median: on a busy machine a few preempted batches can lift a median, never
    // lower a minimum.)
    double best = 0;
    for (size_t i = 0; i < n; ++i)
      if (plans[i].active && !plans[i].samples_us.empty()) {
        double m = median_us(i);
        if (best == 0 || m < best) best = m;
      }
    for (size_t i = 0; i < n; ++i) {
      Plan& p = plans[i];
      if (!p.active || p.samples_us.empty() || static_cast<int>(p.samples_us.size()) >= p.rounds) continue;
      double fastest = *std::min_element(p.samples_us.begin(), p.samples_us.end());
      if (best > 0 && fastest > limits.prune_factor * best) {
        p.active = false;
        contenders[i].timing->status = CandidateStatus::pruned;
        contenders[i].timing->note =
            fmt::format("stopped after {} rounds: {:.3g}x the best", p.samples_us.size(), median_us(i) / best);
      }
    }
    if (hooks.out_of_budget && hooks.out_of_budget()) break;
  }

  for (size_t i = 0; i < contenders.size(); ++i) {
    Plan& p = plans[i];
    CandidateTiming& t = *contenders[i].timing;
    if (t.status == CandidateStatus::failed) continue;
    if (t.status != CandidateStatus::pruned) t.status = CandidateStatus::timed;
    t.samples = static_cast<int>(p.samples_us.size());
    t.calls = p.calls;
    if (!p.samples_us.empty()) {
      t.min_us = *std::min_element(p.samples_us.begin(), p.samples_us.end());
      t.median_us = median_of(p.samples_us);
    }
  }
  return warnings;
}

}  // namespace kiln::autotune
