#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kiln::report {

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

constexpr int kLabelWidth = 230, kPlotWidth = 460, kTextWidth = 110, kBarHeight = 16, kBarGap = 3, kGroupGap = 10;
constexpr int kAxisHeight = 40;

// A tick step of 1, 2 or 5 times a power of ten giving about five ticks up to `max`.
double tick_step(double max) {
  double raw = max / 5.0, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * power) return m * power;
  return 10.0 * power;
}

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "\u2026"; }

}  // namespace

std::string bar_chart(const std::vector<BarGroup>& groups, const std::vector<Legend>& legend, double marker,
                      const std::string& marker_text, const std::string& axis_title) {
  double max = marker > 0 ? marker : 0;
  int rows = 0;
  for (const BarGroup& g : groups)
    for (const Bar& b : g.bars) {
      if (std::isfinite(b.value)) max = std::max(max, b.value);
      ++rows;
    }
  if (!(max > 0)) max = 1;
  double step = tick_step(max * 1.05), top = std::ceil(max * 1.05 / step) * step;
  const int kTop = legend.empty() && marker <= 0 ? 8 : 42;  // room for the legend and the marker's text
  auto x_of = [&](double v) { return kLabelWidth + v / top * kPlotWidth; };
  int plot_height = rows * (kBarHeight + kBarGap) + static_cast<int>(groups.size()) * kGroupGap;
  int width = kLabelWidth + kPlotWidth + kTextWidth, height = kTop + plot_height + kAxisHeight;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
  int lx = kLabelWidth;  // legend along the top
  for (const Legend& l : legend) {
    svg += fmt::format("<rect x=\"{}\" y=\"6\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"16\">{}</text>\n",
                       lx, l.color, lx + 16, escape_html(l.text));
    lx += 24 + static_cast<int>(l.text.size()) * 7;
  }
  for (double t = 0; t <= top + step / 2; t += step) {  // grid and tick labels
    double x = x_of(t);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#555\">{4:g}</text>\n",
                       x, kTop, kTop + plot_height, kTop + plot_height + 14, t);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
                     kLabelWidth + kPlotWidth / 2, kTop + plot_height + 32, escape_html(axis_title));
  int y = kTop + kGroupGap / 2;
  for (const BarGroup& g : groups) {
    int group_height = static_cast<int>(g.bars.size()) * (kBarHeight + kBarGap);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
                       kLabelWidth - 8, y + group_height / 2, escape_html(shorten(g.label, 34)));
    for (const Bar& b : g.bars) {
      double w = std::isfinite(b.value) && b.value > 0 ? x_of(b.value) - kLabelWidth : 0;
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>"
                         "<text x=\"{:.1f}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\n",
                         kLabelWidth, y, w, kBarHeight, b.color, escape_html(b.tooltip), kLabelWidth + w + 4,
                         y + kBarHeight / 2, escape_html(b.text));
      y += kBarHeight + kBarGap;
    }
    y += kGroupGap;
  }
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", kLabelWidth, kTop,
                     kTop + plot_height);
  if (marker > 0)
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#c00\">{4}</text>\n",
                       x_of(marker), kTop - 2, kTop + plot_height, kTop - 6, escape_html(marker_text));
  svg += "</svg>\n";
  return svg;
}

}  // namespace kiln::report
