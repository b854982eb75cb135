// The line chart of the HTML reports (svg.h): sweep curves, GB/s or GFLOP/s against a size.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "report/svg.h"

namespace kiln::report {
namespace {

constexpr int kLeft = 70, kPlotWidth = 640, kRight = 20, kTop = 46, kPlotHeight = 300, kBottom = 48;

double nice_step(double span) {
  double raw = span / 5.0, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * power) return m * power;
  return 10.0 * power;
}

std::string size_label(double v) {
  if (v >= 1e6 && std::fmod(v, 1e6) == 0) return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e3 && std::fmod(v, 1e3) == 0) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

}  // namespace

std::string line_chart(const std::vector<Series>& series, const std::string& x_title, const std::string& y_title,
                       bool log_x) {
  auto usable = [&](double x, double y) { return std::isfinite(x) && std::isfinite(y) && (!log_x || x > 0); };
  double x_min = INFINITY, x_max = -INFINITY, y_max = 0;
  std::vector<double> xs;  // every x with a point, for the ticks
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      y_max = std::max(y_max, s.y[i]);
      xs.push_back(s.x[i]);
    }
  const int width = kLeft + kPlotWidth + kRight, height = kTop + kPlotHeight + kBottom;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height);
  if (xs.empty()) return svg + "<text x=\"20\" y=\"40\">no data</text>\n</svg>\n";
  if (x_max == x_min) x_max = x_min + 1;
  if (!(y_max > 0)) y_max = 1;
  const double y_step = nice_step(y_max * 1.05), y_top = std::ceil(y_max * 1.05 / y_step) * y_step;
  auto fx = [&](double x) { return log_x ? std::log2(x) : x; };
  auto px = [&](double x) { return kLeft + (fx(x) - fx(x_min)) / (fx(x_max) - fx(x_min)) * kPlotWidth; };
  auto py = [&](double y) { return kTop + kPlotHeight - y / y_top * kPlotHeight; };

  for (double t = 0; t <= y_top + y_step / 2; t += y_step)  // horizontal grid with labels
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{1:.1f}\" text-anchor=\"end\" dominant-baseline=\"middle\" fill=\"#555\">{4:g}"
                       "</text>\n",
                       kLeft, py(t), kLeft + kPlotWidth, kLeft - 6, t);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  double last_label = -1e9;
  for (double x : xs) {  // a tick at every measured x; labels where they do not overlap
    double at = px(x);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>\n", at, kTop,
                       kTop + kPlotHeight);
    if (at - last_label < 34) continue;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n", at,
                       kTop + kPlotHeight + 14, size_label(x));
    last_label = at;
  }
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>"
                     "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"#333\"/>\n",
                     kLeft, kTop, kTop + kPlotHeight, kLeft + kPlotWidth);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n", kLeft + kPlotWidth / 2,
                     kTop + kPlotHeight + 34, escape_html(x_title + (log_x ? " (log scale)" : "")));
  svg += fmt::format("<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(-90 14 {0})\">{1}"
                     "</text>\n",
                     kTop + kPlotHeight / 2, escape_html(y_title));

  int lx = kLeft;  // legend
  for (const Series& s : series) {
    svg += fmt::format("<line x1=\"{0}\" y1=\"14\" x2=\"{1}\" y2=\"14\" stroke=\"{2}\" stroke-width=\"2\"{3}/>"
                       "<text x=\"{4}\" y=\"18\">{5}</text>\n",
                       lx, lx + 18, s.color, s.dashed ? " stroke-dasharray=\"5 3\"" : "", lx + 22, escape_html(s.name));
    lx += 34 + static_cast<int>(s.name.size()) * 7;
  }
  svg += fmt::format("<circle cx=\"{}\" cy=\"34\" r=\"5\" fill=\"#333\"/><text x=\"{}\" y=\"38\">chosen by kiln</text>\n",
                     kLeft + 6, kLeft + 16);

  for (const Series& s : series) {
    std::string points;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (usable(s.x[i], s.y[i])) points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", points, s.color,
                       s.dashed ? " stroke-dasharray=\"5 3\"" : "");
    if (s.dashed) continue;
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable(s.x[i], s.y[i])) continue;
      bool marked = i < s.marked.size() && s.marked[i];
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"1.5\">"
                         "<title>{}: {} at {}{}</title></circle>\n",
                         px(s.x[i]), py(s.y[i]), marked ? 5 : 3, marked ? s.color : "white", s.color,
                         escape_html(s.name), fmt::format("{:.1f}", s.y[i]), size_label(s.x[i]),
                         marked ? " (chosen)" : "");
    }
  }
  return svg + "</svg>\n";
}

}  // namespace kiln::report
