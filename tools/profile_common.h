// What `kiln profile` shares between its CPU path (cmd_profile.cpp: eager against compiled) and its
// device path (profile_device.cpp: compiled on a GPU, stream launches against graph replay).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/options.h"
#include "report/profile.h"

namespace kiln::tools {

struct ProfileArgs {
  std::string model, mode = "compiled", trace_file, json_file, html_file;
  std::string device;  // empty: the `device` setting
  std::vector<std::string> dims;
  int64_t threads = 0;
  int iters = 10, warmup = 2, top = 20;
  uint64_t seed = 1;
};

constexpr double kCoverageTolerance = 0.05;  // the op table must account for all but 5% of the run

// "A B C (+2)": the first `max_items` items.
std::string joined(const std::vector<std::string>& items, size_t max_items);
// The kernel table: per kind, then the `top` slowest steps with their share of `e2e`.
void print_kernels(const std::vector<report::KernelTime>& kernels, const std::string& mode, int runs, double e2e,
                   int top);
// "2025-01-31 12:00 UTC" for the reports.
std::string utc_date();
std::string model_name(const ProfileArgs& a);

// The device path: `options.device` is not the CPU. `graph` is the model, `dims` its sizes.
int profile_on_device(const ProfileArgs& a, const Options& options, Graph graph,
                      const std::map<std::string, int64_t>& dims);

}  // namespace kiln::tools
