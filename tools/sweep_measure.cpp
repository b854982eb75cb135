#include "tools/sweep_measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "autotune/choice_helpers.h"
#include "support/error.h"

namespace kiln::tools {

std::vector<double> interleaved_times(const std::vector<std::function<void()>>& fs, double budget_ms, int min_reps,
                                      bool fastest) {
  using clock = std::chrono::steady_clock;
  auto time = [](const std::function<void()>& f) {
    auto s = clock::now();
    f();
    return std::chrono::duration<double, std::milli>(clock::now() - s).count();
  };
  double round = 0;
  for (const auto& f : fs) round += time(f);  // warm: primitives, pages
  int reps = std::clamp(static_cast<int>(budget_ms / std::max(round, 1e-3)), min_reps, 101);
  std::vector<std::vector<double>> t(fs.size());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fs.size(); ++i) t[i].push_back(time(fs[i]));
  std::vector<double> med;
  for (auto& v : t) {
    size_t k = fastest ? 0 : v.size() / 2;
    std::nth_element(v.begin(), v.begin() + long(k), v.end());
    med.push_back(v[k]);
  }
  return med;
}

void fill_random(float* p, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  for (int64_t i = 0; i < n; ++i) p[i] = d(rng);
}

void parallel_copy(const float* src, float* dst, int64_t n) {
  constexpr int64_t kChunk = 16384;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = c * kChunk, e = std::min(n, b + kChunk);
    std::memcpy(dst + b, src + b, size_t(e - b) * sizeof(float));
  }
}

void check_softmax_rows(const Tensor& y, int64_t rows, int64_t width,
                        const std::function<double(int64_t, int64_t)>& input, const std::string& what) {
  std::vector<float> got;
  std::vector<double> want;
  for (int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < width; ++j) max = std::max(max, input(r, j));
    for (int64_t j = 0; j < width; ++j) sum += std::exp(input(r, j) - max);
    for (int64_t j = 0; j < width; ++j) want.push_back(std::exp(input(r, j) - max) / sum);
    got.insert(got.end(), y.data<float>() + r * width, y.data<float>() + (r + 1) * width);
  }
  std::string why;
  if (!autotune::outputs_match(got.data(), want.data(), got.size(), {1e-6, 1e-4}, why))
    internal_error("sweep: {} differs from softmax in fp64: {}", what, why);
}

}  // namespace kiln::tools
