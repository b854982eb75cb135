#include "lower/decompose.h"

#include <cctype>
#include <cstdlib>
#include <fmt/format.h>

namespace kiln::lower {
namespace {

// The rules, one a line. Each must give the eager kernel's result for every input, NaN and
// infinities included (Less and Greater are false on NaN; Max and Min propagate it).
constexpr const char* kRules[] = {
    "LeakyRelu(x; alpha=0.01) = Where(Less(x, 0), Mul(x, alpha), x)",
    "HardSigmoid(x; alpha=0.2, beta=0.5) = Max(Min(Add(Mul(x, alpha), beta), 1), 0)",
    "HardSwish(x) = Mul(x, Max(Min(Add(Mul(x, 0.16666666666666666), 0.5), 1), 0))",
    "Clip(x, lo, hi) = Min(Max(x, lo), hi)",
    "Sum(a, b) = Add(a, b)",
};

class RuleParser {
 public:
  explicit RuleParser(const std::string& text) : text_(text) {}

  DecompositionRule parse() {
    DecompositionRule r;
    r.text = text_;
    r.op = op(identifier());
    expect('(');
    r.params.push_back(identifier());
    while (peek() == ',') {
      ++pos_;
      r.params.push_back(identifier());
    }
    if (peek() == ';') {
      do {
        ++pos_;
        std::string name = identifier();
        expect('=');
        r.attrs.emplace_back(name, number());
      } while (peek() == ',');
    }
    expect(')');
    expect('=');
    rule_ = &r;
    r.body = term();
    if (peek() != '\0') fail("trailing text");
    if (r.body.kind != Term::Kind::call) fail("the right side must be a call");
    return r;
  }

 private:
  Term term() {
    Term t;
    char c = peek();
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      t.kind = Term::Kind::number;
      t.value = number();
      return t;
    }
    std::string name = identifier();
    if (peek() == '(') {
      ++pos_;
      t.kind = Term::Kind::call;
      t.op = op(name);
      t.args.push_back(term());
      while (peek() == ',') {
        ++pos_;
        t.args.push_back(term());
      }
      expect(')');
      return t;
    }
    for (size_t i = 0; i < rule_->params.size(); ++i)
      if (rule_->params[i] == name) return Term{Term::Kind::param, static_cast<int>(i), 0.0, {}, {}};
    for (size_t i = 0; i < rule_->attrs.size(); ++i)
      if (rule_->attrs[i].first == name) return Term{Term::Kind::attr, static_cast<int>(i), 0.0, {}, {}};
    fail("unknown name '" + name + "'");
  }

  char peek() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string identifier() {
    peek();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) fail("expected a name");
    return text_.substr(start, pos_ - start);
  }
  double number() {
    peek();
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    double v = std::strtod(begin, &end);
    if (end == begin) fail("expected a number");
    pos_ += static_cast<size_t>(end - begin);
    return v;
  }
  OpKind op(const std::string& name) {
    auto k = op_from_name(name);
    if (!k) fail("unknown op '" + name + "'");
    return *k;
  }
  [[noreturn]] void fail(const std::string& why) {
    internal_error("decomposition rule '{}': {} at column {}", text_, why, pos_ + 1);
  }

  std::string text_;
  size_t pos_ = 0;
  const DecompositionRule* rule_ = nullptr;
};

bool float_dtype(DType t) { return t == DType::f32 || t == DType::f64; }

// Appends the nodes of `t` and returns the value holding it; `result` is the value the root writes.
ValueId emit(Graph& g, const DecompositionRule& r, const Term& t, const Node& n, std::vector<Node>& out,
             ValueId result, int& counter) {
  DType dtype = g.value(n.inputs[0]).type.dtype;
  auto scalar = [&](double v) {
    std::string name = fmt::format("{}/decomposed/c{}", n.name, counter++);
    return g.add_constant(name, dtype == DType::f64 ? Tensor::scalar(DType::f64, v)
                                                    : Tensor::scalar(DType::f32, static_cast<float>(v)));
  };
  switch (t.kind) {
    case Term::Kind::param: return n.inputs[size_t(t.index)];
    case Term::Kind::number: return scalar(t.value);
    case Term::Kind::attr: {
      const auto& [name, def] = r.attrs[size_t(t.index)];
      return scalar(n.attr_float(name, def));
    }
    case Term::Kind::call: break;
  }
  Node m;
  m.op = t.op;
  m.name = fmt::format("{}/decomposed/{}", n.name, counter++);
  for (const Term& a : t.args) m.inputs.push_back(emit(g, r, a, n, out, kNoValue, counter));
  ValueId v = result != kNoValue ? result : g.add_value(m.name, TensorType{dtype, {}});
  m.outputs = {v};
  out.push_back(std::move(m));
  return v;
}

bool apply(const DecompositionRule& r, Graph& g, const Node& n, std::vector<Node>& out) {
  if (n.inputs.size() != r.params.size() || n.outputs.size() != 1 || n.outputs[0] == kNoValue) return false;
  for (ValueId v : n.inputs)
    if (v == kNoValue || !float_dtype(g.value(v).type.dtype)) return false;
  int counter = 0;
  emit(g, r, r.body, n, out, n.outputs[0], counter);
  return true;
}

}  // namespace

DecompositionRule parse_rule(const std::string& line) { return RuleParser(line).parse(); }

std::vector<DecompositionRule> decomposition_rules() {
  std::vector<DecompositionRule> rules;
  for (const char* line : kRules) rules.push_back(parse_rule(line));
  return rules;
}

void register_decompositions(DecompositionTable& table) {
  for (DecompositionRule& r : decomposition_rules()) {
    OpKind op = r.op;
    std::string name = "rule: " + r.text;
    table.set_base(op, std::move(name), [rule = std::move(r)](Graph& g, const Node& n, std::vector<Node>& out) {
      return apply(rule, g, n, out);
    });
  }
}

int decompose(Graph& g, const DecompositionTable& table) {
  std::vector<Node> nodes;
  int rewritten = 0;
  for (Node& n : g.nodes) {
    if (table.has(n.op) && table.call(n.op, g, n, nodes)) {
      ++rewritten;
      continue;
    }
    nodes.push_back(std::move(n));
  }
  g.set_nodes(std::move(nodes));
  return rewritten;
}

}  // namespace kiln::lower
