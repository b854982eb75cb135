// Inline SVG charts for the HTML reports: plain horizontal bars, no script, no external file.
#pragma once
#include <string>
#include <vector>

namespace kiln::report {

// Text made safe for HTML and SVG (&, <, >, ", ').
std::string escape_html(const std::string& text);

struct Bar {
  double value = 0;      // length; a negative or non-finite value draws no bar, only its text
  std::string color;     // CSS colour
  std::string text;      // written after the bar ("1.31x", "12.4 ms")
  std::string tooltip;   // <title>, shown on hover
};
struct BarGroup {
  std::string label;  // left of the group's bars
  std::vector<Bar> bars;
};
struct Legend {
  std::string color, text;
};

// One row per bar, grouped; `marker` > 0 draws a dashed vertical line there (e.g. 1.0 = parity) with
// `marker_text` above it. `axis_title` is written under the axis.
std::string bar_chart(const std::vector<BarGroup>& groups, const std::vector<Legend>& legend, double marker,
                      const std::string& marker_text, const std::string& axis_title);

// A line chart: one polyline per series over shared axes (x on a log2 scale when log_x, for widths
// and sizes that double), a legend on top. Points with `marked` set are drawn as large filled dots
// (the route or choice kiln picks there); the others as small hollow ones. A series with `dashed`
// is drawn dashed without dots (a reference such as the copy bandwidth).
struct Series {
  std::string name, color;
  std::vector<double> x, y;    // equal lengths; non-finite or (log_x) non-positive points are skipped
  std::vector<bool> marked;    // empty or as long as x
  bool dashed = false;
};
std::string line_chart(const std::vector<Series>& series, const std::string& x_title, const std::string& y_title,
                       bool log_x);

}  // namespace kiln::report
