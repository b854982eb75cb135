#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <set>
#include <unordered_set>

#include "ir/irtext.h"

namespace kiln {

// ---- lexical helpers shared with the parser ----
namespace irtext {

bool is_bare_value_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return true;
}

bool is_bare_ident(std::string_view s) { return is_bare_value_name(s) && is_ident_start(s[0]); }

std::string quote(std::string_view s) {
  std::string r = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\\': r += "\\\\"; break;
      case '"': r += "\\\""; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f)
          r += fmt::format("\\x{:02x}", u);
        else
          r += c;
    }
  }
  return r + "\"";
}

std::string ident_or_quoted(std::string_view s) { return is_bare_ident(s) ? std::string(s) : quote(s); }
std::string value_ref(std::string_view name) {
  return "%" + (is_bare_value_name(name) ? std::string(name) : quote(name));
}

namespace {
template <class F>
std::string format_fp(F v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest representation that round-trips
  return std::string(buf, res.ptr);
}
}  // namespace

std::string format_float(float v) { return format_fp(v); }
std::string format_double(double v) { return format_fp(v); }

}  // namespace irtext

namespace {

using irtext::ident_or_quoted;

uint64_t fnv1a(const void* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string element_string(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f32: return irtext::format_float(t.data<float>()[i]);
    case DType::f64: return irtext::format_double(t.data<double>()[i]);
    case DType::f16: return irtext::format_float(half_to_float(t.data<uint16_t>()[i]));
    case DType::bf16: return irtext::format_float(bf16_to_float(t.data<uint16_t>()[i]));
    case DType::i64: return std::to_string(t.data<int64_t>()[i]);
    case DType::i32: return std::to_string(t.data<int32_t>()[i]);
    case DType::i8: return std::to_string(t.data<int8_t>()[i]);
    case DType::u8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::i16: return std::to_string(t.data<int16_t>()[i]);
    case DType::u16: return std::to_string(t.data<uint16_t>()[i]);
    case DType::u32: return std::to_string(t.data<uint32_t>()[i]);
    case DType::u64: return std::to_string(t.data<uint64_t>()[i]);
    case DType::boolean: return t.data<uint8_t>()[i] ? "true" : "false";
  }
  return "?";
}

// A float attribute must not look like an integer.
std::string attr_float_string(double v) {
  std::string s = irtext::format_double(v);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string dim_text(const Dim& d) {
  if (d.is_static()) return d.value >= 0 ? std::to_string(d.value) : "?";
  std::string s = ident_or_quoted(d.symbol);
  if (d.hint >= 0) s += fmt::format("~{}", d.hint);
  return s;
}

std::string type_text(const TensorType& t) {
  if (static_cast<int>(t.dtype) >= kNumDTypes) return "?";
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? "," : "") + dim_text(t.shape[i]);
  return s + "]";
}

TensorType type_of(const Tensor& t) { return TensorType{t.dtype(), shape_of(t.shape())}; }

// The tensor with its own type in front: `f32[2] [1, 2]`.
std::string typed_tensor_text(const Tensor& t, const PrintOptions& o) {
  return type_text(type_of(t)) + " " + print_tensor_values(t, o);
}

std::string attr_text(const Attribute& a, const PrintOptions& o) {
  struct Visitor {
    const PrintOptions& o;
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return attr_float_string(v); }
    std::string operator()(const std::string& v) const { return irtext::quote(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return v.empty() ? "ints[]" : fmt::format("[{}]", fmt::join(v, ", "));
    }
    std::string operator()(const std::vector<double>& v) const {
      if (v.empty()) return "floats[]";
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + attr_float_string(v[i]);
      return s + "]";
    }
    std::string operator()(const std::vector<std::string>& v) const {
      if (v.empty()) return "strings[]";
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + irtext::quote(v[i]);
      return s + "]";
    }
    std::string operator()(const Tensor& t) const { return typed_tensor_text(t, o); }
    // Nested, indented under the node; the parser reads it back (ir/parser.cpp parse_subgraph).
    std::string operator()(const SubgraphRef& g) const {
      if (!g) return "<no graph>";
      std::string text = print_graph(*g, o);
      if (!text.empty() && text.back() == '\n') text.pop_back();
      std::string out;
      for (char c : text) out += c == '\n' ? std::string("\n    ") : std::string(1, c);
      return out;
    }
  };
  return std::visit(Visitor{o}, a.value);
}

// Printed names: each defined value gets a unique, non-empty name, so that the text parses back.
// A clash or an empty name gets a suffix that no value uses; the rest keep their own names.
class NameTable {
 public:
  explicit NameTable(const Graph& g) : g_(g), printed_(g.values.size()) {
    for (const Value& v : g.values) all_.insert(v.name);
  }
  void define(ValueId v) {
    if (!valid(v) || !printed_[static_cast<size_t>(v)].empty()) return;
    const std::string& raw = g_.values[static_cast<size_t>(v)].name;
    std::string name = raw;
    if (name.empty() || taken_.count(name)) {
      std::string base = raw.empty() ? "v" : raw + ".";
      for (int64_t k = raw.empty() ? v : 1;; ++k) {
        name = base + std::to_string(k);
        if (!all_.count(name) && !taken_.count(name)) break;
      }
    }
    taken_.insert(name);
    printed_[static_cast<size_t>(v)] = std::move(name);
  }
  std::string ref(ValueId v) {
    if (v == kNoValue) return "_";
    if (!valid(v)) return irtext::value_ref(fmt::format("<invalid value {}>", v));
    define(v);  // a value used but never defined (a broken graph): still print something
    return irtext::value_ref(printed_[static_cast<size_t>(v)]);
  }

 private:
  bool valid(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < g_.values.size(); }
  const Graph& g_;
  std::vector<std::string> printed_;
  std::unordered_set<std::string> all_, taken_;
};

bool valid_value(const Graph& g, ValueId v) { return v >= 0 && static_cast<size_t>(v) < g.values.size(); }

// `: f32[2] = [1, 2]`, with the tensor's own type spelled out when it differs from the declared one.
std::string constant_text(const Value& v, const PrintOptions& o) {
  TensorType tt = type_of(*v.constant);
  if (v.type == tt) return ": " + type_text(v.type) + " = " + print_tensor_values(*v.constant, o);
  std::string declared = v.type == TensorType{} ? "?" : type_text(v.type);
  return ": " + declared + " = " + typed_tensor_text(*v.constant, o);
}

std::string op_text(OpKind op) {
  int i = static_cast<int>(op);
  return i < kNumOps ? std::string(op_name(op)) : fmt::format("<bad op {}>", i);
}

}  // namespace

std::string print_tensor_values(const Tensor& t, const PrintOptions& o) {
  if (t.numel() > 0 && t.raw() == nullptr) return fmt::format("<no data, {} elements>", t.numel());
  if (!o.inline_all && t.numel() > o.max_inline_elements && o.external_data)
    return fmt::format("<data {}>", o.external_data(t));
  if (!o.inline_all && t.numel() > o.max_inline_elements)
    return fmt::format("<elided {} bytes fnv={:016x}>", t.nbytes(), fnv1a(t.raw(), t.nbytes()));
  std::string s = "[";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) s += ", ";
    s += element_string(t, i);
  }
  return s + "]";
}

std::string print_graph(const Graph& g, const PrintOptions& o) {
  NameTable names(g);
  std::set<ValueId> graph_inputs(g.inputs.begin(), g.inputs.end()), produced;
  for (const Node& n : g.nodes) produced.insert(n.outputs.begin(), n.outputs.end());

  // Definition order decides who keeps a clashing name: inputs, constants, node outputs.
  std::vector<ValueId> body_constants;
  for (ValueId v : g.inputs) names.define(v);
  for (size_t i = 0; i < g.values.size(); ++i) {
    auto v = static_cast<ValueId>(i);
    if (g.values[i].constant && !graph_inputs.count(v) && !produced.count(v)) {
      body_constants.push_back(v);
      names.define(v);
    }
  }
  for (const Node& n : g.nodes)
    for (ValueId v : n.outputs) names.define(v);

  std::string s = "graph " + ident_or_quoted(g.name) + "(";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    ValueId v = g.inputs[i];
    s += (i ? ", " : "") + names.ref(v);
    if (!valid_value(g, v)) continue;
    const Value& val = g.value(v);
    s += val.constant ? constant_text(val, o) : ": " + type_text(val.type);
  }
  s += ") -> (";
  for (size_t i = 0; i < g.outputs.size(); ++i) s += (i ? ", " : "") + names.ref(g.outputs[i]);
  s += ") {\n";

  for (ValueId v : body_constants) s += "  const " + names.ref(v) + constant_text(g.value(v), o) + "\n";
  for (size_t i = 0; i < g.groups.size(); ++i)
    s += fmt::format("  group {} = {} {}\n", i, ident_or_quoted(g.groups[i].kind), irtext::quote(g.groups[i].label));

  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    s += "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId v = n.outputs[i];
      s += (i ? ", " : "") + names.ref(v);
      if (valid_value(g, v) && !(g.value(v).type == TensorType{})) s += ": " + type_text(g.value(v).type);
    }
    if (!n.outputs.empty()) s += " = ";
    s += op_text(n.op) + "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + names.ref(n.inputs[i]);
    s += ")";
    if (!n.attrs.empty()) {
      s += " {";
      bool first = true;
      for (const auto& [key, attr] : n.attrs) {
        s += (first ? "" : ", ") + ident_or_quoted(key) + "=" + attr_text(attr, o);
        first = false;
      }
      s += "}";
    }
    if (n.name != fmt::format("{}_{}", op_text(n.op), ni)) s += " @" + ident_or_quoted(n.name);
    if (n.group >= 0) s += fmt::format(" in {}", n.group);
    s += "\n";
  }
  return s + "}\n";
}

}  // namespace kiln
