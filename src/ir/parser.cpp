#include "ir/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <unordered_map>

#include "ir/irtext.h"
#include "ir/text_lexer.h"
#include "kiln/errors.h"

namespace kiln {
namespace {

using irtext::Token;
using irtext::TokKind;

// Number spellings: floats carry '.', an exponent, nan or inf; integers are only digits.
bool looks_float(std::string_view s) { return s.find_first_of(".eEnNiI") != std::string_view::npos; }

class Parser {
 public:
  Parser(std::string_view text, const DataSource* data) : lex_(text), data_(data) { advance(); }

  Graph parse() {
    Graph g = parse_one_graph();
    if (tok_.kind != TokKind::End) fail(tok_, "unexpected {} after the graph's closing '}}'", tok_.describe());
    return g;
  }

 private:
  // As deep as the ONNX importer lets If nest (onnx/import.cpp), so that hostile text cannot exhaust the stack.
  static constexpr int kMaxSubgraphDepth = 16;

  // `graph NAME(inputs) -> (outputs) { statements }` into g_ (empty on entry).
  Graph parse_one_graph() {
    expect_word("graph");
    g_.name = expect_name("a graph name");
    parse_signature();
    expect_punct("{");
    while (!tok_.is_punct("}")) parse_statement();
    advance();
    for (const auto& [name, at] : output_refs_) g_.outputs.push_back(lookup(name, at, "graph output"));
    return std::move(g_);
  }

  // A subgraph attribute (If's branches), as the printer nests it: its own values, groups and outputs,
  // none of the enclosing graph's (a branch reads outer values only through its inputs).
  Attribute parse_subgraph(const Token& at) {
    if (depth_ >= kMaxSubgraphDepth) fail(at, "subgraphs nested more than {} deep", kMaxSubgraphDepth);
    Graph outer = std::move(g_);
    auto outer_defined = std::move(defined_);
    auto outer_outputs = std::move(output_refs_);
    g_ = Graph{};
    defined_.clear();
    output_refs_.clear();
    ++depth_;
    auto sub = std::make_shared<const Graph>(parse_one_graph());
    --depth_;
    g_ = std::move(outer);
    defined_ = std::move(outer_defined);
    output_refs_ = std::move(outer_outputs);
    return Attribute{SubgraphRef(std::move(sub))};
  }

  // ---- token helpers ----
  void advance() { tok_ = lex_.next(); }
  template <class... Args>
  [[noreturn]] void fail(const Token& at, fmt::format_string<Args...> f, Args&&... args) {
    irtext::fail_at(at.line, at.col, fmt::format(f, std::forward<Args>(args)...));
  }
  void expect_punct(std::string_view p) {
    if (!tok_.is_punct(p)) fail(tok_, "expected '{}', found {}", p, tok_.describe());
    advance();
  }
  void expect_word(std::string_view w) {
    if (!tok_.is_word(w)) fail(tok_, "expected '{}', found {}", w, tok_.describe());
    advance();
  }
  bool accept_punct(std::string_view p) {
    if (!tok_.is_punct(p)) return false;
    advance();
    return true;
  }
  // An identifier, bare or quoted.
  std::string expect_name(std::string_view what) {
    if (tok_.kind != TokKind::Ident && tok_.kind != TokKind::String)
      fail(tok_, "expected {}, found {}", what, tok_.describe());
    std::string s = std::move(tok_.text);
    advance();
    return s;
  }
  // Comma-separated items up to `close` (the opening bracket already taken).
  template <class F>
  void comma_list(std::string_view close, F&& item) {
    if (accept_punct(close)) return;
    while (true) {
      item();
      if (accept_punct(close)) return;
      if (!tok_.is_punct(",")) fail(tok_, "expected ',' or '{}', found {}", close, tok_.describe());
      advance();
    }
  }

  // ---- numbers ----
  int64_t parse_int(const Token& t, std::string_view what) {
    if (t.kind != TokKind::Number || looks_float(t.text))
      fail(t, "expected an integer for {}, found {}", what, t.describe());
    std::string_view s = t.text;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) fail(t, "{} {} does not fit in 64 bits", what, t.text);
    if (ec != std::errc() || ptr != s.data() + s.size()) fail(t, "bad integer '{}' for {}", t.text, what);
    return v;
  }
  uint64_t parse_uint64(const Token& t, std::string_view what) {
    if (t.kind != TokKind::Number || looks_float(t.text))
      fail(t, "expected an integer for {}, found {}", what, t.describe());
    std::string_view s = t.text;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    if (!s.empty() && s[0] == '-') fail(t, "{} {} is negative", what, t.text);
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) fail(t, "{} {} does not fit in 64 bits", what, t.text);
    if (ec != std::errc() || ptr != s.data() + s.size()) fail(t, "bad integer '{}' for {}", t.text, what);
    return v;
  }
  template <class F>  // float or double, read directly so that the shortest spelling is exact
  F parse_fp(const Token& t, std::string_view what) {
    if (t.kind != TokKind::Number && t.kind != TokKind::Ident)
      fail(t, "expected a number for {}, found {}", what, t.describe());
    std::string_view s = t.text;
    bool neg = false;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
      neg = s[0] == '-';
      s.remove_prefix(1);
    }
    F v{};
    if (s == "nan") {
      v = std::numeric_limits<F>::quiet_NaN();
    } else if (s == "inf") {
      v = std::numeric_limits<F>::infinity();
    } else {
      if (s.empty() || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.'))
        fail(t, "expected a number for {}, found {}", what, t.describe());
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
      if (ec == std::errc::result_out_of_range) fail(t, "{} {} is out of range", what, t.text);
      if (ec != std::errc() || ptr != s.data() + s.size()) fail(t, "bad number '{}' for {}", t.text, what);
    }
    return neg ? -v : v;
  }
  bool is_fp_word(const Token& t) const { return t.kind == TokKind::Ident && (t.text == "nan" || t.text == "inf"); }

  // ---- types ----
  Dim parse_dim() {
    if (tok_.kind == TokKind::Number) {
      int64_t v = parse_int(tok_, "a dimension");
      if (v < 0) fail(tok_, "dimension {} is negative", v);
      advance();
      return Dim::fixed(v);
    }
    if (accept_punct("?")) return Dim{};
    Token at = tok_;
    std::string sym = expect_name("a dimension (a size, a symbol or '?')");
    if (sym.empty()) fail(at, "a dimension symbol must not be empty");
    int64_t hint = -1;
    if (accept_punct("~")) {
      hint = parse_int(tok_, "a size hint");
      if (hint < 0) fail(tok_, "size hint {} is negative", hint);
      advance();
    }
    return Dim::sym(std::move(sym), hint);
  }
  // `?` (unknown) or dtype[dims].
  TensorType parse_type() {
    if (accept_punct("?")) return TensorType{};
    if (tok_.kind != TokKind::Ident) fail(tok_, "expected a type such as f32[2,3], found {}", tok_.describe());
    auto dt = dtype_from_name(tok_.text);
    if (!dt) fail(tok_, "unknown dtype {}", tok_.describe());
    advance();
    TensorType t{*dt, {}};
    expect_punct("[");
    comma_list("]", [&] { t.shape.push_back(parse_dim()); });
    return t;
  }

  // ---- tensor literals ----
  void append_element(std::vector<unsigned char>& bytes, DType dt, const Token& t) {
    auto put = [&](auto v) {
      size_t at = bytes.size();
      bytes.resize(at + sizeof v);
      std::memcpy(bytes.data() + at, &v, sizeof v);
    };
    auto ranged = [&](int64_t lo, int64_t hi) {
      int64_t v = parse_int(t, fmt::format("a {} element", dtype_name(dt)));
      if (v < lo || v > hi) fail(t, "{} does not fit {}", v, dtype_name(dt));
      return v;
    };
    switch (dt) {
      case DType::f32: put(parse_fp<float>(t, "an f32 element")); break;
      case DType::f64: put(parse_fp<double>(t, "an f64 element")); break;
      case DType::f16: put(float_to_half(parse_fp<float>(t, "an f16 element"))); break;
      case DType::bf16: put(float_to_bf16(parse_fp<float>(t, "a bf16 element"))); break;
      case DType::i64: put(parse_int(t, "an i64 element")); break;
      case DType::i32: put(static_cast<int32_t>(ranged(INT32_MIN, INT32_MAX))); break;
      case DType::i8: put(static_cast<int8_t>(ranged(-128, 127))); break;
      case DType::u8: put(static_cast<uint8_t>(ranged(0, 255))); break;
      case DType::i16: put(static_cast<int16_t>(ranged(INT16_MIN, INT16_MAX))); break;
      case DType::u16: put(static_cast<uint16_t>(ranged(0, UINT16_MAX))); break;
      case DType::u32: put(static_cast<uint32_t>(ranged(0, UINT32_MAX))); break;
      case DType::u64: put(parse_uint64(t, "a u64 element")); break;
      case DType::boolean:
        if (t.is_word("true") || t.is_word("false"))
          put(static_cast<uint8_t>(t.text == "true"));
        else
          put(static_cast<uint8_t>(ranged(0, 1)));
        break;
    }
  }
  // [elements] (or an elided marker, refused) for a tensor of type `t`, which must be static.
  Tensor parse_values(const TensorType& t, const Token& type_at) {
    int64_t numel = 1;
    for (const Dim& d : t.shape) {
      if (!d.is_static() || d.value < 0) fail(type_at, "a constant needs a static type, not {}", type_string(t));
      if (__builtin_mul_overflow(numel, d.value, &numel)) fail(type_at, "element count of {} overflows", type_string(t));
    }
    if (tok_.is_punct("<") && data_ != nullptr) return parse_data_reference(t);
    if (tok_.is_punct("<"))
      fail(tok_, "the constant's values were elided when the graph was printed; print it with "
                 "PrintOptions::inline_all to get text that parses back");
    if (!tok_.is_punct("[")) fail(tok_, "expected '[' and the constant's values, found {}", tok_.describe());
    Token open = tok_;
    advance();
    std::vector<unsigned char> bytes;
    int64_t count = 0;
    comma_list("]", [&] {
      if (count == numel) fail(tok_, "more than the {} values that {} holds", numel, type_string(t));
      append_element(bytes, t.dtype, tok_);
      advance();
      ++count;
    });
    if (count != numel) fail(open, "{} values for {}, which holds {}", count, type_string(t), numel);
    Tensor r = Tensor::empty(t.dtype, static_dims(t.shape));
    if (!bytes.empty()) std::memcpy(r.raw(), bytes.data(), bytes.size());
    return r;
  }
  // `<data N>`: the tensor comes from the data source.
  Tensor parse_data_reference(const TensorType& t) {
    advance();
    if (!tok_.is_word("data")) fail(tok_, "expected 'data' after '<', found {}", tok_.describe());
    advance();
    Token at = tok_;
    if (tok_.kind != TokKind::Number) fail(tok_, "expected a data section number, found {}", tok_.describe());
    int64_t index = parse_int(tok_, "a data section number");
    advance();
    expect_punct(">");
    try {
      return (*data_)(index, t);
    } catch (const UserError& e) {
      fail(at, "data section {}: {}", index, e.what());
    }
  }
  // `[values]` for the declared type, or `type [values]` when the tensor's type differs from it.
  // The tensor must fit the declared type (as the verifier demands) unless that is unknown.
  Tensor parse_literal(const TensorType& declared, const Token& declared_at) {
    if (tok_.kind != TokKind::Ident && !tok_.is_punct("?")) return parse_values(declared, declared_at);
    Token at = tok_;
    TensorType own = parse_type();
    Tensor t = parse_values(own, at);
    bool fits = declared == TensorType{} || (declared.dtype == own.dtype && declared.rank() == own.rank());
    for (size_t d = 0; fits && d < declared.shape.size(); ++d) {
      const Dim& dim = declared.shape[d];
      fits = !dim.is_static() || dim.value < 0 || dim.value == own.shape[d].value;
    }
    if (!fits) fail(at, "the constant's values are {} but it is declared {}", type_string(own), type_string(declared));
    return t;
  }

  // ---- attributes ----
  Attribute parse_list(std::string_view kind) {
    std::vector<Token> items;
    comma_list("]", [&] {
      items.push_back(tok_);
      advance();
    });
    bool any_string = false, any_float = false;
    for (const Token& t : items) {
      any_string |= t.kind == TokKind::String;
      any_float |= (t.kind == TokKind::Number && looks_float(t.text)) || is_fp_word(t);
    }
    if (kind.empty()) kind = any_string ? "strings" : any_float ? "floats" : "ints";
    if (kind == "strings") {
      std::vector<std::string> v;
      for (const Token& t : items) {
        if (t.kind != TokKind::String) fail(t, "expected a string in a list of strings, found {}", t.describe());
        v.push_back(t.text);
      }
      return Attribute{std::move(v)};
    }
    if (kind == "floats") {
      std::vector<double> v;
      for (const Token& t : items) v.push_back(parse_fp<double>(t, "a list of floats"));
      return Attribute{std::move(v)};
    }
    std::vector<int64_t> v;
    for (const Token& t : items) v.push_back(parse_int(t, "a list of integers"));
    return Attribute{std::move(v)};
  }
  Attribute parse_attr_value() {
    Token at = tok_;
    if (tok_.kind == TokKind::Number) {
      advance();
      if (looks_float(at.text)) return Attribute{parse_fp<double>(at, "a float attribute")};
      return Attribute{parse_int(at, "an integer attribute")};
    }
    if (tok_.kind == TokKind::String) {
      advance();
      return Attribute{at.text};
    }
    if (accept_punct("[")) return parse_list("");
    if (tok_.kind == TokKind::Ident) {
      if (is_fp_word(tok_)) {
        advance();
        return Attribute{parse_fp<double>(at, "a float attribute")};
      }
      if (tok_.text == "ints" || tok_.text == "floats" || tok_.text == "strings") {
        std::string kind = tok_.text;
        advance();
        expect_punct("[");
        return parse_list(kind);
      }
      if (tok_.text == "graph") return parse_subgraph(at);  // what the printer writes for If's branches
      if (dtype_from_name(tok_.text)) {
        TensorType t = parse_type();
        return Attribute{parse_values(t, at)};
      }
    }
    fail(at, "expected an attribute value (number, string, list or typed tensor), found {}", at.describe());
  }

  // ---- values ----
  ValueId lookup(const std::string& name, const Token& at, std::string_view what) {
    auto it = defined_.find(name);
    if (it == defined_.end()) fail(at, "{} {} is not defined before this point", what, irtext::value_ref(name));
    return it->second;
  }
  // A new value name: non-empty and not defined yet (also not earlier in the same statement).
  std::string new_value_name(const std::vector<std::string>& pending) {
    if (tok_.kind != TokKind::Value) fail(tok_, "expected a value name like %x, found {}", tok_.describe());
    if (tok_.text.empty()) fail(tok_, "a value name must not be empty");
    if (defined_.count(tok_.text) || std::find(pending.begin(), pending.end(), tok_.text) != pending.end())
      fail(tok_, "value {} is defined twice", irtext::value_ref(tok_.text));
    std::string name = std::move(tok_.text);
    advance();
    return name;
  }
  void define(const std::string& name, ValueId id) { defined_.emplace(name, id); }
  // `%x: type [= literal]`, as a graph input or a `const` statement.
  ValueId parse_declaration(bool literal_required) {
    std::string name = new_value_name({});
    expect_punct(":");
    Token type_at = tok_;
    TensorType type = parse_type();
    ValueId id;
    if (literal_required || tok_.is_punct("=")) {
      expect_punct("=");
      id = g_.add_constant(name, parse_literal(type, type_at));
      g_.value(id).type = type;
    } else {
      id = g_.add_value(name, type);
    }
    define(name, id);
    return id;
  }

  void parse_signature() {
    expect_punct("(");
    comma_list(")", [&] { g_.inputs.push_back(parse_declaration(false)); });
    expect_punct("->");
    expect_punct("(");
    comma_list(")", [&] {
      if (tok_.kind != TokKind::Value) fail(tok_, "expected a graph output like %y, found {}", tok_.describe());
      output_refs_.emplace_back(tok_.text, tok_);
      advance();
    });
  }

  void parse_statement() {
    if (tok_.is_word("const")) {
      advance();
      parse_declaration(true);
      return;
    }
    if (tok_.is_word("group")) {
      parse_group();
      return;
    }
    std::vector<std::string> out_names;
    std::vector<TensorType> out_types;
    if (tok_.kind == TokKind::Value || tok_.is_word("_")) {
      while (true) {
        if (tok_.is_word("_")) {
          advance();
          out_names.emplace_back();
          out_types.emplace_back();
        } else {
          out_names.push_back(new_value_name(out_names));
          out_types.push_back(accept_punct(":") ? parse_type() : TensorType{});
        }
        if (!accept_punct(",")) break;
      }
      expect_punct("=");
    }
    parse_call(std::move(out_names), std::move(out_types));
  }

  // group N = kind "label": N is the next group number.
  void parse_group() {
    advance();
    Token at = tok_;
    if (tok_.kind != TokKind::Number || parse_int(tok_, "a group number") != static_cast<int64_t>(g_.groups.size()))
      fail(at, "expected group number {}, found {}", g_.groups.size(), at.describe());
    advance();
    expect_punct("=");
    std::string kind = expect_name("a group kind");
    if (tok_.kind != TokKind::String) fail(tok_, "expected the group's label as a string, found {}", tok_.describe());
    g_.groups.push_back(FusionGroup{std::move(kind), tok_.text});
    advance();
  }

  // Op(%a, _) {attr=value, ...} @name in N
  void parse_call(std::vector<std::string> out_names, std::vector<TensorType> out_types) {
    if (tok_.kind != TokKind::Ident) fail(tok_, "expected an op name or a value name, found {}", tok_.describe());
    auto op = op_from_name(tok_.text);
    if (!op) fail(tok_, "unknown op {}", tok_.describe());
    advance();
    std::vector<ValueId> inputs;
    expect_punct("(");
    comma_list(")", [&] {
      if (tok_.is_word("_")) {
        inputs.push_back(kNoValue);
      } else {
        if (tok_.kind != TokKind::Value) fail(tok_, "expected an input like %x or _, found {}", tok_.describe());
        inputs.push_back(lookup(tok_.text, tok_, "input"));
      }
      advance();
    });
    std::map<std::string, Attribute, std::less<>> attrs;
    if (accept_punct("{")) {
      comma_list("}", [&] {
        Token key_at = tok_;
        std::string key = expect_name("an attribute name");
        if (attrs.count(key)) fail(key_at, "attribute '{}' is given twice", key);
        expect_punct("=");
        attrs.emplace(std::move(key), parse_attr_value());
      });
    }
    std::optional<std::string> node_name;
    if (accept_punct("@")) node_name = expect_name("a node name");
    int32_t group = -1;
    if (tok_.is_word("in")) {
      advance();
      Token at = tok_;
      int64_t index = tok_.kind == TokKind::Number ? parse_int(tok_, "a group number") : -1;
      if (index < 0 || index >= static_cast<int64_t>(g_.groups.size()))
        fail(at, "expected the number of a declared group, found {}", at.describe());
      group = static_cast<int32_t>(index);
      advance();
    }

    g_.add_node(*op, std::move(inputs), out_names);
    Node& n = g_.nodes.back();
    if (node_name) n.name = std::move(*node_name);
    n.attrs = std::move(attrs);
    n.group = group;
    for (size_t i = 0; i < out_names.size(); ++i) {
      if (out_names[i].empty()) continue;
      g_.value(n.outputs[i]).type = std::move(out_types[i]);
      define(out_names[i], n.outputs[i]);
    }
  }

  irtext::Lexer lex_;
  const DataSource* data_;  // null: `<data N>` is refused
  Token tok_;
  Graph g_;
  std::unordered_map<std::string, ValueId> defined_;
  std::vector<std::pair<std::string, Token>> output_refs_;
  int depth_ = 0;  // subgraphs open around the current statement
};

}  // namespace

Graph parse_graph(std::string_view text) { return Parser(text, nullptr).parse(); }
Graph parse_graph(std::string_view text, const DataSource& data) { return Parser(text, &data).parse(); }

}  // namespace kiln
