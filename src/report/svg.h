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

}  // namespace kiln::report
