// The device half of `kiln bench --html`: kiln compiled on the GPU (its graph replayed) beside the
// PyTorch modes of --peer torch, and the ratio best torch / kiln per model.
#include <fmt/format.h>

#include "report/html.h"
#include "report/svg.h"

namespace kiln::report {
namespace {

using nlohmann::json;

constexpr const char* kTorchColor = "#e15759";
const char* const kModes[] = {"eager", "default", "reduce-overhead"};

std::string num(const json& v, int digits, const std::string& suffix = "") {
  if (!v.is_number()) return "&ndash;";
  return fmt::format("{:.{}f}{}", v.get<double>(), digits, suffix);
}

std::string torch_cell(const json& r, const std::string& mode) {
  const json t = r.value("torch", json::object()).value(mode, json());
  if (t.is_null()) return "&ndash;";
  if (t.value("median_ms", json()).is_number()) {
    std::string best = r.value("torch_best_mode", json()) == mode ? " <span class=\"meta\">(best)</span>" : "";
    return num(t["median_ms"], 2) + best;
  }
  const json error = t.value("error", json());
  return fmt::format("<span class=\"fail\" title=\"{}\">failed</span>",
                     escape_html(error.is_string() ? error.get<std::string>() : "no time"));
}

}  // namespace

std::string device_bench_section(const json& report) {
  const json& records = report.at("records");
  const std::string device = report.value("device", std::string());
  std::string h = "<h2>Latency (median, ms)</h2>\n<table>\n<tr><th class=\"l\">model</th><th class=\"l\">sizes</th>";
  h += fmt::format("<th>kiln on {}</th>", escape_html(device));
  for (const char* mode : kModes) h += fmt::format("<th>torch {}</th>", mode);
  h += "<th>best torch / kiln</th><th>compile cold s</th><th>compile warm s</th><th>kernels / ops</th>"
       "<th class=\"l\">accuracy</th></tr>\n";
  for (const json& r : records) {
    std::string sizes;
    const json dims = r.value("dims", json::object());
    for (auto& [k, v] : dims.items()) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v.dump());
    const bool pass = r.value("accuracy", std::string()) == "pass";
    h += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{} <span class=\"meta\">({}&ndash;{})"
                     "</span></td>",
                     escape_html(r.value("model", std::string())), escape_html(sizes),
                     num(r.value("compiled_ms", json()), 2), num(r.value("compiled_p10_ms", json()), 2),
                     num(r.value("compiled_p90_ms", json()), 2));
    for (const char* mode : kModes) h += "<td>" + torch_cell(r, mode) + "</td>";
    h += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td class=\"l {}\">{} ({})</td></tr>\n",
                     num(r.value("torch_vs_kiln", json()), 2, "x"), num(r.value("compile_s_cold", json()), 2),
                     num(r.value("compile_s_warm", json()), 2), r.value("kernels", 0), r.value("ops", 0),
                     pass ? "pass" : "fail", pass ? "pass" : "FAIL", escape_html(r.value("rule", std::string())));
  }
  h += "</table>\n<p class=\"meta\">kiln: each timed run replays its CUDA graph, inputs and outputs on the device. "
       "PyTorch: scripts/torch_peer.py in the same command, each call bracketed by torch.cuda.synchronize(). "
       "Best torch / kiln = the fastest PyTorch mode's median / kiln's median (above 1: kiln is faster). "
       "Accuracy: kiln on the device against kiln eager on the CPU (allclose at 1e-4, else fp64 RMSE within 2x "
       "the reference's own).</p>\n";
  for (const json& r : records)
    if (r.value("torch_error", json()).is_string())
      h += fmt::format("<p class=\"meta\">PyTorch: no time for {}: {}</p>\n", escape_html(r.value("model", std::string())),
                       escape_html(r["torch_error"].get<std::string>()));

  if (!report.value("peer", json()).is_string()) return h;
  std::vector<BarGroup> ratio;
  for (const json& r : records) {
    const json v = r.value("torch_vs_kiln", json());
    ratio.push_back({r.value("model", std::string()),
                     {{v.is_number() ? v.get<double>() : -1, kTorchColor, v.is_number() ? num(v, 2, "x") : "n/a",
                       "best torch mode / kiln"}}});
  }
  h += "<h2>Best PyTorch mode / kiln</h2>\n" +
       bar_chart(ratio, {{kTorchColor, "best torch / kiln"}}, 1.0, "parity", "ratio (x)");
  return h;
}

}  // namespace kiln::report
