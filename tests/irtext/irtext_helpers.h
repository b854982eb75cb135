// Shared helpers for the IR text tests.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kiln/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "kiln/builder.h"
#include "support/error.h"

namespace kiln::testing_irtext {

inline PrintOptions all_values() {
  PrintOptions o;
  o.inline_all = true;
  return o;
}

// Same bytes, except that any NaN matches any NaN of the same sign (payloads are not kept).
inline bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.as_double(i), y = b.as_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (!(std::isnan(x) && std::isnan(y) && std::signbit(x) == std::signbit(y))) return false;
      continue;
    }
    size_t es = dtype_size(a.dtype());
    if (std::memcmp(static_cast<const char*>(a.raw()) + i * es, static_cast<const char*>(b.raw()) + i * es, es))
      return false;
  }
  return true;
}

inline bool same_double(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) && std::signbit(x) == std::signbit(y);
  return std::memcmp(&x, &y, sizeof x) == 0;
}

inline bool same_attr(const Attribute& a, const Attribute& b) {
  if (a.value.index() != b.value.index()) return false;
  if (auto* x = std::get_if<double>(&a.value)) return same_double(*x, std::get<double>(b.value));
  if (auto* x = std::get_if<std::vector<double>>(&a.value)) {
    const auto& y = std::get<std::vector<double>>(b.value);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i)
      if (!same_double((*x)[i], y[i])) return false;
    return true;
  }
  if (auto* x = std::get_if<Tensor>(&a.value)) return same_tensor(*x, std::get<Tensor>(b.value));
  if (auto* x = std::get_if<int64_t>(&a.value)) return *x == std::get<int64_t>(b.value);
  if (auto* x = std::get_if<std::string>(&a.value)) return *x == std::get<std::string>(b.value);
  if (auto* x = std::get_if<std::vector<int64_t>>(&a.value)) return *x == std::get<std::vector<int64_t>>(b.value);
  return std::get<std::vector<std::string>>(a.value) == std::get<std::vector<std::string>>(b.value);
}

// Prints with every value, parses, verifies, prints again: the two texts must be identical; the
// parsed graph must also match the original structurally (for graphs whose names are unique).
inline Graph expect_round_trip(const Graph& g) {
  std::string text = print_graph(g, all_values());
  Graph back;
  try {
    back = parse_graph(text);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << text;
    return back;
  }
  EXPECT_NO_THROW(verify_graph(back, "parse"));
  EXPECT_EQ(print_graph(back, all_values()), text);
  return back;
}

}  // namespace kiln::testing_irtext
