#include "runtime/inputs.h"

#include <algorithm>
#include <cctype>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.h"

namespace kiln {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Rows of the smallest constant table this input indexes through Gather (0 when it indexes none).
int64_t gather_rows(const Graph& g, ValueId input) {
  int64_t rows = 0;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Gather || n.inputs.size() < 2 || n.inputs[1] != input) continue;
    const Value& table = g.value(n.inputs[0]);
    if (!table.constant || table.constant->rank() == 0) continue;
    int64_t axis = n.attr_int("axis", 0);
    int rank = table.constant->rank();
    if (axis < -rank || axis >= rank) continue;
    int64_t r = table.constant->dim(static_cast<int>(axis));
    rows = rows == 0 ? r : std::min(rows, r);
  }
  return rows;
}

}  // namespace

std::map<std::string, int64_t> resolve_dims(const Graph& g, const std::map<std::string, Tensor>& given,
                                            std::map<std::string, int64_t> dims) {
  std::map<std::string, std::string> origin;  // where each size came from, for the messages
  for (const auto& [symbol, size] : dims) origin[symbol] = fmt::format("--dim {}={}", symbol, size);
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    auto it = given.find(v.name);
    if (it == given.end()) continue;
    const Tensor& t = it->second;
    // Checked here, before the symbols are read from it: a tensor of another rank says nothing of them.
    if (t.rank() != v.type.rank())
      user_error("input '{}': the model expects rank {} ({}), the given tensor has shape {}", v.name, v.type.rank(),
                 type_string(v.type), t.shape_string());
    for (size_t i = 0; i < v.type.shape.size(); ++i) {
      const Dim& d = v.type.shape[i];
      const int64_t got = t.shape()[i];
      if (d.is_static()) {
        if (got != d.value)
          user_error("input '{}': dimension {} must be {} ({}), the given tensor has shape {}", v.name, i, d.value,
                     type_string(v.type), t.shape_string());
        continue;
      }
      auto [known, fresh] = dims.emplace(d.symbol, got);
      if (fresh) origin[d.symbol] = fmt::format("input '{}'", v.name);
      else if (known->second != got)
        user_error("input '{}': dimension {} ('{}') is {}, but {} gives {} = {}", v.name, i, d.symbol, got,
                   origin[d.symbol], d.symbol, known->second);
    }
  }
  std::vector<std::string> missing;
  for (ValueId id : g.inputs)
    for (const Dim& d : g.value(id).type.shape) {
      if (d.is_static() || dims.count(d.symbol)) continue;
      if (d.hint >= 0) dims[d.symbol] = d.hint;
      else if (std::find(missing.begin(), missing.end(), d.symbol) == missing.end()) missing.push_back(d.symbol);
    }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    user_error("the model's inputs have symbolic dimensions without a size: {} (give each with --dim NAME=SIZE, "
               "for example --dim {}=1)", list, missing.front());
  }
  return dims;
}

void check_dims_known(const Graph& g, const std::map<std::string, int64_t>& dims) {
  std::vector<std::string> symbols;
  for (ValueId id : g.inputs)
    for (const Dim& d : g.value(id).type.shape)
      if (!d.is_static() && std::find(symbols.begin(), symbols.end(), d.symbol) == symbols.end())
        symbols.push_back(d.symbol);
  for (const auto& [name, size] : dims) {
    if (std::find(symbols.begin(), symbols.end(), name) != symbols.end()) continue;
    user_error("--dim {}={}: the model's inputs have no dimension '{}' ({})", name, size, name,
               symbols.empty() ? std::string("they have only fixed sizes")
                               : fmt::format("their symbols: {}", fmt::join(symbols, ", ")));
  }
}

std::map<std::string, Tensor> make_inputs(const Graph& g, const std::map<std::string, Tensor>& given, uint64_t seed) {
  std::map<std::string, Tensor> out = given;
  std::mt19937_64 rng(seed);
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (out.count(v.name)) continue;
    Tensor t = Tensor::empty(v.type.dtype, static_dims(v.type.shape));
    int64_t n = t.numel();
    if (is_float(v.type.dtype)) {
      std::normal_distribution<double> normal(0.0, 1.0);
      std::vector<double> vals(static_cast<size_t>(n));
      for (auto& x : vals) x = normal(rng);
      t = Tensor::from_vector<double>(v.type.dtype, t.shape(), vals);
    } else if (v.type.dtype == DType::boolean) {
      for (int64_t i = 0; i < n; ++i) t.data<bool>()[i] = (rng() & 1) != 0;
    } else {
      int64_t rows = gather_rows(g, id);
      bool mask = lower(v.name).find("mask") != std::string::npos;
      int64_t hi = rows > 0 ? rows : 2;
      std::uniform_int_distribution<int64_t> dist(0, hi - 1);
      std::vector<int64_t> vals(static_cast<size_t>(n));
      for (auto& x : vals) x = mask ? 1 : dist(rng);
      t = Tensor::from_vector<int64_t>(v.type.dtype, t.shape(), vals);
    }
    out.emplace(v.name, std::move(t));
  }
  return out;
}

}  // namespace kiln
