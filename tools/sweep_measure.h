// The measuring pieces of `kiln sweep softmax` (cmd_sweep.cpp, sweep_attention.cpp): interleaved
// timing, the copy the routes are compared against, inputs, and the fp64 check of a route's output.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::tools {

// Median (or with `fastest`, minimum) milliseconds of each function, run in turns so that outside
// load falls on all alike: one warm-up round, then rounds filling `budget_ms` (at least `min_reps`,
// at most 101). The minimum suits a machine so loaded that most runs wait for a core.
std::vector<double> interleaved_times(const std::vector<std::function<void()>>& fs, double budget_ms, int min_reps,
                                      bool fastest);

// Uniform in [-4, 4], the same for the same seed.
void fill_random(float* p, int64_t n, uint32_t seed);

// The copy the routes are compared against: the same bytes, read once and written once, by every thread.
void parallel_copy(const float* src, float* dst, int64_t n);

// Rows 0, rows / 2 and rows - 1 of y [rows, width] against softmax in fp64 of `input(row, column)`. A
// route that differs is a kiln bug: internal error naming `what`.
void check_softmax_rows(const Tensor& y, int64_t rows, int64_t width,
                        const std::function<double(int64_t, int64_t)>& input, const std::string& what);

}  // namespace kiln::tools
