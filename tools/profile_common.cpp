#include "tools/profile_common.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>

namespace kiln::tools {

std::string joined(const std::vector<std::string>& items, size_t max_items) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) s += (i ? " " : "") + items[i];
  if (items.size() > max_items) s += fmt::format(" (+{})", items.size() - max_items);
  return s;
}

void print_kernels(const std::vector<report::KernelTime>& kernels, const std::string& mode, int runs, double e2e,
                   int top) {
  std::vector<const report::KernelTime*> order;
  std::map<std::string, std::pair<int, double>> by_kind;
  for (const auto& k : kernels) {
    order.push_back(&k);
    by_kind[k.kind].first++;
    by_kind[k.kind].second += k.mean_ms;
  }
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->mean_ms > b->mean_ms; });
  std::printf("kernels (%s): %zu steps, mean over %d runs, %.3f ms end to end\n", mode.c_str(), kernels.size(), runs, e2e);
  for (const auto& [kind, v] : by_kind)
    std::printf("  %-10s %4d steps %10.3f ms (%5.1f%%)\n", kind.c_str(), v.first, v.second,
                e2e > 0 ? 100 * v.second / e2e : 0.0);
  std::printf("  %4s %10s %7s  %-10s %-34s %s\n", "#", "ms/run", "share", "kind", "label", "source ops");
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(top); ++i) {
    const auto& k = *order[i];
    std::string label = k.label.size() > 34 ? k.label.substr(0, 33) + "~" : k.label;
    std::printf("  %4zu %10.3f %6.1f%%  %-10s %-34s %s\n", i + 1, k.mean_ms, e2e > 0 ? 100 * k.mean_ms / e2e : 0.0,
                k.kind.c_str(), label.c_str(), joined(k.source_ops, 8).c_str());
  }
}

std::string utc_date() {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return date;
}

std::string model_name(const ProfileArgs& a) { return a.model.empty() ? "(bundled demo transformer)" : a.model; }

}  // namespace kiln::tools
