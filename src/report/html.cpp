#include "report/html.h"

#include <fmt/format.h>

#include "report/svg.h"

namespace kiln::report {
namespace {

using nlohmann::json;

constexpr const char* kEagerColor = "#4e79a7";
constexpr const char* kOrtColor = "#f28e2b";
constexpr const char* kCompiledColor = "#59a14f";

}  // namespace

std::string html_head(const std::string& title) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 1100px; }}
table {{ border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
th {{ background: #f3f3f3; }}
td.l, th.l {{ text-align: left; }}
.meta {{ color: #555; font-size: 13px; }}
.pass {{ color: #1a7f37; }} .fail {{ color: #c00; font-weight: bold; }}
code {{ background: #f3f3f3; padding: 1px 4px; }}
</style>
</head>
<body>
)",
                     escape_html(title));
}

namespace {

// A number with `digits` decimals, or a dash for null.
std::string num(const json& v, int digits, const std::string& suffix = "") {
  if (!v.is_number()) return "&ndash;";
  return fmt::format("{:.{}f}{}", v.get<double>(), digits, suffix);
}

std::string spread(const json& r, const std::string& side) {
  if (side == "ort" && r.value("ort_error", json()).is_string())
    return fmt::format("<span class=\"fail\" title=\"{}\">failed</span>", escape_html(r["ort_error"].get<std::string>()));
  if (!r.value(side + "_ms", json()).is_number()) return "&ndash;";
  return fmt::format("{} <span class=\"meta\">({}&ndash;{})</span>", num(r[side + "_ms"], 2),
                     num(r[side + "_p10_ms"], 2), num(r[side + "_p90_ms"], 2));
}

std::string kernel_chart(const json& kernels) {
  std::vector<BarGroup> groups;
  for (const json& k : kernels) {
    std::string ops;
    for (const json& op : k.value("source_ops", json::array())) ops += (ops.empty() ? "" : " ") + op.get<std::string>();
    double ms = k.value("ms", 0.0);
    groups.push_back({fmt::format("{} ({})", k.value("label", std::string()), k.value("kind", std::string())),
                      {{ms, kCompiledColor, fmt::format("{:.3f} ms ({:.1f}%)", ms, 100.0 * k.value("share", 0.0)),
                        "source ops: " + ops + "; output " + k.value("output", std::string())}}});
  }
  return bar_chart(groups, {}, 0, "", "ms per run");
}

// The CPU's latency table and speedup chart: kiln eager, kiln compiled and ONNX Runtime.
std::string cpu_bench_section(const json& report) {
  const json& records = report.at("records");
  std::string h;
  h += "<h2>Latency (median, p10&ndash;p90, ms)</h2>\n<table>\n<tr><th class=\"l\">model</th><th class=\"l\">sizes</th>"
       "<th>kiln eager</th><th>kiln compiled</th><th>ONNX Runtime</th><th>compiled vs eager</th>"
       "<th>compiled vs ORT</th><th>compile cold s</th><th>compile warm s</th><th>kernels / ops</th>"
       "<th class=\"l\">accuracy</th></tr>\n";
  for (const json& r : records) {
    std::string sizes;
    const json dims = r.value("dims", json::object());
    for (auto& [k, v] : dims.items()) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v.dump());
    bool pass = r.value("accuracy", std::string()) == "pass";
    h += fmt::format("<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td class=\"l {}\">{} ({})</td></tr>\n",
                     escape_html(r.value("model", std::string())), escape_html(sizes), spread(r, "eager"),
                     spread(r, "compiled"), spread(r, "ort"), num(r.value("speedup_vs_eager", json()), 2, "x"),
                     num(r.value("speedup_vs_ort", json()), 2, "x"), num(r.value("compile_s_cold", json()), 2),
                     num(r.value("compile_s_warm", json()), 2), r.value("kernels", 0), r.value("ops", 0),
                     pass ? "pass" : "fail", pass ? "pass" : "FAIL", escape_html(r.value("rule", std::string())));
  }
  h += "</table>\n<p class=\"meta\">Speedup = the other side's median / compiled median (above 1: compiled is "
       "faster). Accuracy: compiled against eager and against the peer by PyTorch's benchmark-runner rule "
       "(allclose at 1e-4, else fp64 RMSE within 2x the reference's own).</p>\n";

  std::vector<BarGroup> speed;
  for (const json& r : records) {
    BarGroup g{r.value("model", std::string()), {}};
    const json se = r.value("speedup_vs_eager", json()), so = r.value("speedup_vs_ort", json());
    g.bars.push_back({se.is_number() ? se.get<double>() : -1, kEagerColor, se.is_number() ? num(se, 2, "x") : "n/a",
                      "compiled vs kiln eager"});
    if (report.value("peer", json()).is_string())
      g.bars.push_back({so.is_number() ? so.get<double>() : -1, kOrtColor, so.is_number() ? num(so, 2, "x") : "n/a",
                        "compiled vs ONNX Runtime"});
    speed.push_back(g);
  }
  std::vector<Legend> legend = {{kEagerColor, "compiled vs kiln eager"}};
  if (report.value("peer", json()).is_string()) legend.push_back({kOrtColor, "compiled vs ONNX Runtime"});
  h += "<h2>Speedup of kiln compiled</h2>\n" + bar_chart(speed, legend, 1.0, "parity", "speedup (x)");
  return h;
}

}  // namespace

std::string bench_html(const json& report) {
  std::string h = html_head("kiln bench");
  const json& records = report.at("records");
  h += "<h1>kiln bench</h1>\n";
  h += fmt::format("<p class=\"meta\">{} &middot; {} threads &middot; {} timed runs per side after {} warm-up "
                   "&middot; peer: {} &middot; kiln {}</p>\n",
                   escape_html(report.value("date", std::string())), report.value("threads", 0),
                   report.value("iters", 0), report.value("warmup", 0),
                   escape_html(report.value("peer", json()).is_string() ? report["peer"].get<std::string>() : "none"),
                   escape_html(report.value("kiln_version", std::string())));
  if (report.contains("command"))
    h += fmt::format("<p class=\"meta\">command: <code>{}</code></p>\n", escape_html(report["command"].get<std::string>()));

  const bool on_device = report.value("device", std::string("cpu")) != "cpu";
  if (on_device) h += device_bench_section(report);
  else h += cpu_bench_section(report);

  h += on_device ? "<h2>Top kernels (compiled, stream launches timed with device events, mean ms per run)</h2>\n"
                 : "<h2>Top kernels (compiled, mean ms per run)</h2>\n";
  for (const json& r : records) {
    if (!r.contains("top_kernels") || r["top_kernels"].empty()) continue;
    h += fmt::format("<h3>{}</h3>\n", escape_html(r.value("model", std::string()))) + kernel_chart(r["top_kernels"]);
  }
  h += "<h2>Sweep curves</h2>\n";
  const json sweeps = report.value("sweeps", json::array());
  if (sweeps.empty())
    h += "<p>No sweep in this report: <code>kiln sweep softmax --json FILE</code> (or <code>--store</code>, "
         "which keeps it as this device's calibration) and <code>kiln bench --sweep FILE</code> add its curves.</p>\n";
  for (const json& s : sweeps) h += sweep_section(s.at("sweep"), s.value("origin", std::string()));
  h += "</body>\n</html>\n";
  return h;
}

std::string profile_html(const json& report) {
  std::string model = report.value("model", std::string());
  std::string h = html_head("kiln profile: " + model);
  const json& t = report.at("op_table");
  h += fmt::format("<h1>kiln profile: {}</h1>\n", escape_html(model));
  // A device profile has no eager side; its kernel times are stream launches, beside the graph's replay.
  const std::string device = report.value("device", std::string("cpu"));
  const bool on_device = device != "cpu";
  if (on_device)
    h += fmt::format("<p class=\"meta\">{} &middot; device {} &middot; {} profiled runs &middot; end to end: stream "
                     "launches {:.3f} ms, graph replay {:.3f} ms per run (median, measured in the same command)</p>\n"
                     "<p class=\"meta\">Kernel times are stream launches: device time between events recorded "
                     "around each step's launch, in runs that launch every kernel (a profiled run does not replay "
                     "the CUDA graph).</p>\n",
                     escape_html(report.value("date", std::string())), escape_html(device), report.value("iters", 0),
                     report.value("launch_e2e_ms", 0.0), report.value("replay_e2e_ms", 0.0));
  else
    h += fmt::format("<p class=\"meta\">{} &middot; {} threads &middot; {} runs per mode &middot; end to end: eager "
                     "{:.3f} ms, compiled {:.3f} ms per run</p>\n",
                     escape_html(report.value("date", std::string())), report.value("threads", 0),
                     report.value("iters", 0), t.value("eager_e2e_ms", 0.0), t.value("compiled_e2e_ms", 0.0));
  h += fmt::format("<h2>Top kernels ({})</h2>\n", escape_html(report.value("mode", std::string())));
  h += kernel_chart(report.at("kernels"));

  h += "<h2>Time by source op type (ms per run)</h2>\n";
  if (on_device)
    h += fmt::format("<p class=\"meta\">{}. Table total: {:.3f} ms ({:.1f}% of the stream launches' end to "
                     "end).</p>\n",
                     escape_html(t.value("rule", std::string())), t.value("compiled_table_ms", 0.0),
                     100.0 * t.value("compiled_coverage", 0.0));
  else
    h += fmt::format("<p class=\"meta\">{}. Table totals: eager {:.3f} ms ({:.1f}% of end to end), compiled "
                     "{:.3f} ms ({:.1f}%).</p>\n",
                     escape_html(t.value("rule", std::string())), t.value("eager_table_ms", 0.0),
                     100.0 * t.value("eager_coverage", 0.0), t.value("compiled_table_ms", 0.0),
                     100.0 * t.value("compiled_coverage", 0.0));
  std::vector<BarGroup> groups;
  for (const json& row : t.at("rows")) {
    if (groups.size() >= 15) continue;
    BarGroup g{row.value("op", std::string()), {}};
    if (!on_device)
      g.bars.push_back({row.value("eager_ms", 0.0), kEagerColor, fmt::format("{:.3f}", row.value("eager_ms", 0.0)),
                        "eager"});
    g.bars.push_back({row.value("compiled_ms", 0.0), kCompiledColor,
                      fmt::format("{:.3f}", row.value("compiled_ms", 0.0)), "compiled"});
    groups.push_back(std::move(g));
  }
  std::vector<Legend> legend = {{kCompiledColor, on_device ? "compiled on " + device : "compiled"}};
  if (!on_device) legend.insert(legend.begin(), {kEagerColor, "eager"});
  h += bar_chart(groups, legend, 0, "", "ms per run");
  if (on_device) {
    h += "<table>\n<tr><th class=\"l\">op</th><th>nodes</th><th>ms</th></tr>\n";
    for (const json& row : t.at("rows"))
      h += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{:.3f}</td></tr>\n",
                       escape_html(row.value("op", std::string())), row.value("compiled_nodes", 0),
                       row.value("compiled_ms", 0.0));
    return h + "</table>\n</body>\n</html>\n";
  }
  h += "<table>\n<tr><th class=\"l\">op</th><th>eager nodes</th><th>eager ms</th><th>compiled nodes</th>"
       "<th>compiled ms</th><th>compiled / eager</th></tr>\n";
  for (const json& row : t.at("rows")) {
    double e = row.value("eager_ms", 0.0), c = row.value("compiled_ms", 0.0);
    h += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{:.3f}</td><td>{}</td><td>{:.3f}</td><td>{}</td></tr>\n",
                     escape_html(row.value("op", std::string())), row.value("eager_nodes", 0), e,
                     row.value("compiled_nodes", 0), c, e > 0 ? fmt::format("{:.2f}", c / e) : "&ndash;");
  }
  h += "</table>\n</body>\n</html>\n";
  return h;
}

}  // namespace kiln::report
