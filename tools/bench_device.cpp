#include "tools/bench_device.h"

#include <cstdio>
#include <fmt/format.h>
#include <set>

#include "report/bench.h"

namespace kiln::tools {
using nlohmann::json;

// PyTorch runs at kiln's precision (torch_peer.py's names are the setting's: fp32, bf16, fp16).
std::string torch_dtype(const Options& options) { return options.precision; }

void add_torch_peer(std::vector<json>& records, const report::TorchLocation& torch, const Options& options, int iters,
                    int warmup, double budget_s) {
  report::TorchRequest request;
  request.dtypes = {torch_dtype(options)};
  request.modes = kTorchModes;
  request.iters = iters;
  request.warmup = warmup;
  request.budget_s = budget_s;
  std::set<std::string> asked;
  for (json& r : records) {
    const std::string model = r["model"].get<std::string>();
    const std::string why = report::torch_peer_refuses(model, r["dims"]);
    if (!why.empty()) r["torch_error"] = why;
    else if (asked.insert(model).second) request.models.push_back(model);
  }
  if (request.models.empty()) return;
  std::fprintf(stderr, "[bench torch] PyTorch %s on %s: %zu models, modes eager, default, reduce-overhead\n",
               torch.version.c_str(), torch.gpu.c_str(), request.models.size());
  const report::TempDir out("kiln_bench_torch_");
  const report::TorchResults results = report::run_torch_peer(torch, request, out.path());
  for (json& r : records) {
    const std::string model = r["model"].get<std::string>();
    if (!asked.count(model)) continue;
    auto it = results.lines.find(model);
    if (it != results.lines.end()) report::add_torch_times(r, it->second, request.dtypes[0]);
    else r["torch_error"] = results.failure.empty() ? "scripts/torch_peer.py printed nothing for it" : results.failure;
  }
}

namespace {

std::string cell(const json& v, const char* fmt_spec, const char* suffix = "") {
  if (!v.is_number()) return "-";
  return fmt::format(fmt::runtime(fmt_spec), v.get<double>()) + suffix;
}

std::string torch_cell(const json& r, const std::string& mode) {
  const json t = r.value("torch", json::object()).value(mode, json());
  if (t.is_null()) return "-";
  if (t.value("median_ms", json()).is_number()) return cell(t["median_ms"], "{:.2f}");
  return "failed";
}

}  // namespace

void print_device_table(const std::vector<json>& records, const std::string& device) {
  std::printf("| model | sizes | kiln %s ms | torch eager ms | torch default ms | torch reduce-overhead ms | "
              "best torch / kiln | compile cold s | compile warm s | kernels / ops | accuracy |\n",
              device.c_str());
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const json& r : records) {
    std::string sizes;
    for (auto& [k, v] : r["dims"].items()) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v.dump());
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s (%s) |\n",
                r["model"].get<std::string>().c_str(), sizes.c_str(), cell(r["compiled_ms"], "{:.2f}").c_str(),
                torch_cell(r, "eager").c_str(), torch_cell(r, "default").c_str(),
                torch_cell(r, "reduce-overhead").c_str(), cell(r.value("torch_vs_kiln", json()), "{:.2f}", "x").c_str(),
                cell(r["compile_s_cold"], "{:.2f}").c_str(), cell(r["compile_s_warm"], "{:.2f}").c_str(),
                r["kernels"].get<int>(), r["ops"].get<int>(), r["accuracy"].get<std::string>().c_str(),
                r["rule"].get<std::string>().c_str());
  }
  for (const json& r : records)
    if (r.value("torch_error", json()).is_string())
      std::printf("PyTorch: no time for %s: %s\n", r["model"].get<std::string>().c_str(),
                  r["torch_error"].get<std::string>().c_str());
}

}  // namespace kiln::tools
