// Sweep curves for the HTML reports (html.h): softmax routes by row width, GEMM choices by M.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "report/html.h"
#include "report/svg.h"

namespace kiln::report {
namespace {

using nlohmann::json;

const char* kPalette[] = {"#59a14f", "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                          "#9c755f", "#bab0ac"};

// Series by name in first-seen order, each point (x, y, chosen).
struct SeriesBuilder {
  std::vector<Series> series;
  Series& named(const std::string& name) {
    for (Series& s : series)
      if (s.name == name) return s;
    series.push_back({name, kPalette[series.size() % std::size(kPalette)], {}, {}, {}, false});
    return series.back();
  }
  void add(const std::string& name, double x, double y, bool chosen) {
    Series& s = named(name);
    s.x.push_back(x);
    s.y.push_back(y);
    s.marked.push_back(chosen);
  }
};

double number(const json& r, const char* key) {
  const json& v = r.value(key, json());
  return v.is_number() ? v.get<double>() : NAN;
}

std::string softmax_section(const json& sweep) {
  SeriesBuilder b;
  std::set<double> widths;
  for (const json& r : sweep.at("records")) {
    b.add(r.value("route", std::string("?")), number(r, "width"), number(r, "gbps"), r.value("chosen", false));
    widths.insert(number(r, "width"));
  }
  const double copy = number(sweep, "copy_gbps");
  if (std::isfinite(copy) && !widths.empty()) {
    Series c{fmt::format("copy ({:.1f} GB/s)", copy), "#888", {*widths.begin(), *widths.rbegin()}, {copy, copy}, {}, true};
    b.series.push_back(c);
  }
  std::string h = fmt::format("<h3>Softmax routes by row width ({}, {} threads, {})</h3>\n",
                              escape_html(sweep.value("dtype", std::string("f32"))), sweep.value("threads", 0),
                              escape_html(sweep.value("statistic", std::string("median"))));
  h += line_chart(b.series, "row width (columns)", "GB/s (bytes read + written)", true);
  const json& t = sweep.value("thresholds", json::object());
  auto limit = [](const json& v) { return v.is_number() ? v.dump() : std::string("never"); };
  h += fmt::format("<p class=\"meta\">Derived thresholds: library up to {}, fused per row up to {}, split rows above, "
                   "library from {}. Routed choice within 10% of the fastest at every width: {}.</p>\n",
                   limit(t.value("library_max_width", json(0))), limit(t.value("max_fused_width", json())),
                   limit(t.value("library_min_width", json())),
                   sweep.value("routed_within_10_percent", false) ? "yes" : "no");
  const json attention = sweep.value("attention", json::array());
  if (!attention.empty()) {
    h += "<table>\n<tr><th class=\"l\">attention scores</th><th class=\"l\">route</th><th>GB/s</th><th>ms</th>"
         "<th class=\"l\">chosen</th></tr>\n";
    for (const json& r : attention) {
      std::string shape;
      for (const json& d : r.value("shape", json::array())) shape += (shape.empty() ? "" : "x") + d.dump();
      h += fmt::format("<tr><td class=\"l\">[{}]</td><td class=\"l\">{}</td><td>{:.1f}</td><td>{:.3f}</td>"
                       "<td class=\"l\">{}</td></tr>\n",
                       shape, escape_html(r.value("route", std::string())), number(r, "gbps"), number(r, "ms"),
                       r.value("chosen", false) ? "&#9679;" : "");
    }
    h += "</table>\n";
  }
  return h;
}

// "template:<config>" -> "template" (the best config of each shape is drawn), others as they are.
std::string family(const std::string& choice) { return choice.substr(0, choice.find(':')); }

std::string gemm_section(const json& sweep) {
  // One chart per (N, K, epilogue), GFLOP/s against M per choice family (templates: the best config at
  // each M; the dot is filled when the pick was in that family).
  using Key = std::tuple<int64_t, int64_t, std::string>;
  struct Point {
    double gflops = 0;
    bool chosen = false;
  };
  std::map<Key, std::map<std::string, std::map<double, Point>>> best;
  std::vector<std::string> order;
  for (const json& r : sweep.at("records")) {
    Key key{r.value("n", int64_t{0}), r.value("k", int64_t{0}), r.value("epilogue", std::string())};
    const std::string f = family(r.value("choice", std::string("?")));
    if (std::find(order.begin(), order.end(), f) == order.end()) order.push_back(f);
    Point& p = best[key][f][number(r, "m")];
    p.gflops = std::max(p.gflops, number(r, "gflops"));
    p.chosen = p.chosen || r.value("chosen", false);
  }
  std::map<Key, SeriesBuilder> charts;
  for (auto& [key, families] : best)
    for (const std::string& f : order)
      if (auto it = families.find(f); it != families.end())
        for (auto& [m, p] : it->second) charts[key].add(f == "template" ? "template (best config)" : f, m, p.gflops, p.chosen);
  std::string h;
  for (auto& [key, b] : charts) {
    auto& [n, k, epilogue] = key;
    h += fmt::format("<h3>GEMM N={} K={}, epilogue {}</h3>\n", n, k, escape_html(epilogue.empty() ? "none" : epilogue));
    h += line_chart(b.series, "M (rows)", "GFLOP/s", true);
  }
  return h;
}

}  // namespace

std::string sweep_section(const json& sweep, const std::string& origin) {
  std::string h;
  if (!origin.empty()) h += fmt::format("<p class=\"meta\">from {}</p>\n", escape_html(origin));
  if (!sweep.is_object() || !sweep.contains("records") || !sweep["records"].is_array() || sweep["records"].empty())
    return h + "<p>This sweep holds no records.</p>\n";
  const json& first = sweep["records"][0];
  if (first.contains("width")) return h + softmax_section(sweep);
  if (first.contains("gflops")) return h + gemm_section(sweep);
  return h + "<p>Not a sweep kiln knows (neither softmax widths nor GEMM shapes).</p>\n";
}

std::string sweep_html(const json& sweep, const std::string& title) {
  std::string h = html_head(title);
  h += fmt::format("<h1>{}</h1>\n", escape_html(title));
  if (sweep.contains("device")) h += fmt::format("<p class=\"meta\">{}</p>\n", escape_html(sweep["device"].get<std::string>()));
  h += sweep_section(sweep, "") + "</body>\n</html>\n";
  return h;
}

}  // namespace kiln::report
