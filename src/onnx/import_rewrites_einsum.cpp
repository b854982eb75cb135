// Einsum (version 12) as kiln ops, with numpy.einsum's semantics (the onnx reference evaluates it with
// numpy): the equation is parsed at import, each operand's repeated labels become a diagonal (Gather of
// the flattened pair of axes), labels no other operand or the output has are summed (ReduceSum), and
// the operands are contracted left to right, each pair as one batched MatMul over the labels they share
// (Transpose, Reshape to [batch, M, K] x [batch, K, N], Reshape back), or a broadcasting Mul where they
// share none to sum. A label of size 1 in one operand and larger in another broadcasts, as in numpy: that
// operand drops the axis (Squeeze), being constant along it. The '...' dims are labels of their own,
// right-aligned across operands, so they broadcast the same way.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

constexpr int kEllipsisLabel = 256;  // the '...' dims are labels 256, 257, ... (letters are their char codes)

std::string label_name(int l) {
  return l < kEllipsisLabel ? "'" + std::string(1, char(l)) + "'" : "'...' dim " + std::to_string(l - kEllipsisLabel);
}

// One side of the equation: its letters in order, and where '...' sits (-1: nowhere).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

Term parse_term(const NodeForm& n, std::string_view t, const std::string& what) {
  Term term;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      term.letters.push_back(c);
    } else if (c == '.') {
      if (t.substr(i, 3) != "...") user_error("{}: {} of the equation has a '.' that is not part of '...'", n.desc(), what);
      if (term.ellipsis_at >= 0) user_error("{}: {} of the equation has '...' twice", n.desc(), what);
      term.ellipsis_at = int(term.letters.size());
      i += 2;
    } else {
      user_error("{}: {} of the equation has the character '{}' (expected letters, '...', ',' and '->')", n.desc(),
                 what, c);
    }
  }
  return term;
}

// An operand on its way: its value and the label of each axis, with the axis's size where static (-1 not).
struct Operand {
  ValueId v;
  std::vector<int> labels;
  std::vector<int64_t> sizes;
};

struct Ein {
  OnnxGraphReader& b;
  const NodeForm& n;

  ValueId op(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}, const std::string& out = {}) {
    return add(b, n, k, std::move(in), "t", std::move(attrs), out);
  }
  ValueId i64s(const std::vector<int64_t>& v) { return b.constant_i64(n.name + "_i", v); }
  ValueId i64(int64_t v) { return b.graph().add_constant(b.unique_name(n.name + "_i"), Tensor::scalar(DType::i64, v)); }
  // Shape(x)[start:end]; kNoValue for an empty range (concat leaves it out).
  ValueId dims(ValueId x, int64_t start, int64_t end) {
    if (start == end) return kNoValue;
    AttrMap a;
    a["start"] = Attribute{start}, a["end"] = Attribute{end};
    return op(OpKind::Shape, {x}, std::move(a));
  }
  // The product of Shape(x)[start:end] as a 1-D tensor of one element ([1] for an empty range).
  ValueId prod(ValueId x, int64_t start, int64_t end) {
    if (start == end) return i64s({1});
    if (end == start + 1) return dims(x, start, end);
    return op(OpKind::ReduceProd, {dims(x, start, end), i64s({0})}, one_attr("keepdims", Attribute{int64_t{1}}));
  }
  // The 1-D shape of the given parts (none: the shape of a scalar).
  ValueId concat(std::vector<ValueId> parts) {
    std::erase(parts, kNoValue);
    if (parts.empty()) return i64s({});
    if (parts.size() == 1) return parts[0];
    return op(OpKind::Concat, std::move(parts), one_attr("axis", Attribute{int64_t{0}}));
  }

  // x's axes reordered to `order` (labels it has); no node when they are in that order already.
  void permute(Operand& x, const std::vector<int>& order) {
    std::vector<int64_t> perm;
    std::vector<int64_t> sizes;
    for (int l : order) {
      auto at = std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin();
      perm.push_back(at), sizes.push_back(x.sizes[size_t(at)]);
    }
    bool same = true;
    for (size_t i = 0; i < perm.size(); ++i) same = same && perm[i] == int64_t(i);
    if (!same) x.v = op(OpKind::Transpose, {x.v}, one_attr("perm", Attribute{perm}));
    x.labels = order, x.sizes = sizes;
  }
  // Removes the axes at `axes` by `k` (Squeeze or ReduceSum without keepdims).
  void drop(Operand& x, const std::vector<int64_t>& axes, OpKind k) {
    if (axes.empty()) return;
    AttrMap a;
    if (k == OpKind::ReduceSum) a["keepdims"] = Attribute{int64_t{0}};
    x.v = op(k, {x.v, i64s(axes)}, std::move(a));
    for (auto it = axes.rbegin(); it != axes.rend(); ++it)
      x.labels.erase(x.labels.begin() + *it), x.sizes.erase(x.sizes.begin() + *it);
  }
  // The diagonal of the first two axes labelled `l`: both moved last, flattened, every (n+1)-th element.
  void diagonal(Operand& x, int l) {
    std::vector<int> order;
    for (int m : x.labels)
      if (m != l) order.push_back(m);
    auto first = std::find(x.labels.begin(), x.labels.end(), l);
    auto second = std::find(first + 1, x.labels.end(), l);
    std::vector<int64_t> perm, sizes;
    for (size_t i = 0; i < x.labels.size(); ++i)
      if (x.labels[i] != l || (int64_t(i) != first - x.labels.begin() && int64_t(i) != second - x.labels.begin()))
        perm.push_back(int64_t(i)), sizes.push_back(x.sizes[i]);
    std::vector<int> labels;
    for (int64_t p : perm) labels.push_back(x.labels[size_t(p)]);
    const int64_t r = int64_t(x.labels.size());
    perm.push_back(first - x.labels.begin()), perm.push_back(second - x.labels.begin());
    bool in_place = true;  // the pair is last already
    for (size_t i = 0; i < perm.size(); ++i) in_place = in_place && perm[i] == int64_t(i);
    ValueId t = in_place ? x.v : op(OpKind::Transpose, {x.v}, one_attr("perm", Attribute{perm}));
    ValueId size = op(OpKind::Squeeze, {dims(t, r - 1, r), i64s({0})});  // the diagonal's length, a scalar
    ValueId flat = op(OpKind::Reshape, {t, concat({dims(t, 0, r - 2), op(OpKind::Mul, {dims(t, r - 2, r - 1), dims(t, r - 1, r)})})});
    ValueId index = op(OpKind::Range, {i64(0), op(OpKind::Mul, {size, size}), op(OpKind::Add, {size, i64(1)})});
    x.v = op(OpKind::Gather, {flat, index}, one_attr("axis", Attribute{r - 2}));
    labels.push_back(l), sizes.push_back(x.sizes[size_t(first - x.labels.begin())]);
    x.labels = labels, x.sizes = sizes;
  }

  // a and b contracted over the labels they share that `keep` (the output's and later operands') lacks.
  Operand contract(Operand a, Operand c, const std::set<int>& keep) {
    auto has = [](const Operand& x, int l) { return std::count(x.labels.begin(), x.labels.end(), l) > 0; };
    std::vector<int> batch, summed, a_only, c_only;
    for (int l : a.labels) (has(c, l) ? (keep.count(l) ? batch : summed) : a_only).push_back(l);
    for (int l : c.labels)
      if (!has(a, l)) c_only.push_back(l);
    Operand r{kNoValue, batch, {}};
    r.labels.insert(r.labels.end(), a_only.begin(), a_only.end());
    r.labels.insert(r.labels.end(), c_only.begin(), c_only.end());
    auto size_of = [&](int l) {
      int64_t s = -1;
      for (const Operand* x : {&a, &c})
        for (size_t i = 0; i < x->labels.size(); ++i)
          if (x->labels[i] == l) s = std::max(s, x->sizes[i]);
      return s;
    };
    for (int l : r.labels) r.sizes.push_back(size_of(l));
    const int64_t nb = int64_t(batch.size()), na = int64_t(a_only.size()), nc = int64_t(c_only.size()),
                  ns = int64_t(summed.size());
    auto cat = [](std::vector<int> x, const std::vector<int>& y) { return x.insert(x.end(), y.begin(), y.end()), x; };
    if (summed.empty()) {  // nothing to sum: a broadcasting product, each side unsqueezed where the other has axes
      permute(a, cat(batch, a_only)), permute(c, cat(batch, c_only));
      std::vector<int64_t> a_new, c_new;
      for (int64_t i = 0; i < nc; ++i) a_new.push_back(nb + na + i);
      for (int64_t i = 0; i < na; ++i) c_new.push_back(nb + i);
      ValueId av = a_new.empty() ? a.v : op(OpKind::Unsqueeze, {a.v, i64s(a_new)});
      ValueId cv = c_new.empty() ? c.v : op(OpKind::Unsqueeze, {c.v, i64s(c_new)});
      r.v = op(OpKind::Mul, {av, cv});
      return r;
    }
    permute(a, cat(cat(batch, a_only), summed)), permute(c, cat(cat(batch, summed), c_only));
    // [batch, M, K] x [batch, K, N]: a Reshape where the groups are not single axes already.
    ValueId av = na == 1 && ns == 1 ? a.v : op(OpKind::Reshape, {a.v, concat({dims(a.v, 0, nb), prod(a.v, nb, nb + na), prod(a.v, nb + na, nb + na + ns)})});
    ValueId cv = nc == 1 && ns == 1 ? c.v : op(OpKind::Reshape, {c.v, concat({dims(c.v, 0, nb), prod(c.v, nb, nb + ns), prod(c.v, nb + ns, nb + ns + nc)})});
    r.v = op(OpKind::MatMul, {av, cv});
    if (na != 1 || nc != 1)  // the batch dims of the product (they broadcast), then a's and c's own
      r.v = op(OpKind::Reshape, {r.v, concat({dims(r.v, 0, nb), dims(a.v, nb, nb + na), dims(c.v, nb + ns, nb + ns + nc)})});
    return r;
  }
};

void einsum(OnnxGraphReader& b, NodeForm& n) {
  if (!n.has_output(0)) user_error("{}: output 0 is missing", n.desc());
  if (n.outputs.size() > 1) user_error("{}: has one output, got {}", n.desc(), n.outputs.size());
  for (const auto& [name, a] : n.attrs)
    if (name != "equation") user_error("{}: unknown attribute '{}'", n.desc(), name);
  auto eq_attr = n.attrs.find("equation");
  if (eq_attr == n.attrs.end()) user_error("{}: attribute 'equation' is required", n.desc());
  const auto* eq_text = std::get_if<std::string>(&eq_attr->second.value);
  if (!eq_text) user_error("{}: attribute 'equation' must be a string", n.desc());
  std::string eq;
  for (char c : *eq_text)
    if (c != ' ') eq += c;

  // Inputs, then the output.
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos)
    user_error("{}: the equation '{}' has '->' twice", n.desc(), *eq_text);
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(n, std::string_view(lhs).substr(start, comma - start), "input " + std::to_string(terms.size())));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != n.inputs.size())
    user_error("{}: the equation '{}' has {} input term(s) but the node has {} input(s)", n.desc(), *eq_text,
               terms.size(), n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!n.has_input(i)) user_error("{}: input {} is missing", n.desc(), i);

  // Each operand's labels, its '...' expanded to the dims its rank leaves (right-aligned across operands).
  std::vector<Operand> ops;
  int64_t ell_rank = 0;
  std::vector<int64_t> ell_of(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    std::optional<int> rank = b.known_rank(n.inputs[i]);
    const int64_t letters = int64_t(terms[i].letters.size());
    if (terms[i].ellipsis_at >= 0) {
      if (!rank) unsupported("{}: input {} has '...' in the equation but its rank is not known at import", n.desc(), i);
      if (*rank < letters)
        user_error("{}: input {} has rank {} but the equation gives it {} letters and '...'", n.desc(), i, *rank, letters);
      ell_of[i] = *rank - letters;
      ell_rank = std::max(ell_rank, ell_of[i]);
    } else if (rank && *rank != letters) {
      user_error("{}: input {} has rank {} but the equation gives it {} letters", n.desc(), i, *rank, letters);
    }
  }
  std::map<int, int> count;  // occurrences of each letter over the inputs (implicit output: those seen once)
  for (size_t i = 0; i < terms.size(); ++i) {
    Operand o{n.inputs[i], {}, {}};
    const Term& t = terms[i];
    for (int k = 0; k <= int(t.letters.size()); ++k) {
      if (k == t.ellipsis_at)
        for (int64_t e = ell_rank - ell_of[i]; e < ell_rank; ++e) o.labels.push_back(kEllipsisLabel + int(e));
      if (k < int(t.letters.size())) o.labels.push_back(t.letters[size_t(k)]), ++count[t.letters[size_t(k)]];
    }
    const bool typed = b.known_rank(o.v).has_value();
    for (size_t a = 0; a < o.labels.size(); ++a) {
      const Dim d = typed ? b.graph().value(o.v).type.shape[a] : Dim{};
      o.sizes.push_back(typed && d.is_static() ? d.value : -1);
    }
    ops.push_back(std::move(o));
  }

  std::vector<int> out;
  if (arrow == std::string::npos) {  // implicit: '...' first, then the letters seen once, in ASCII order
    for (int64_t e = 0; e < ell_rank; ++e) out.push_back(kEllipsisLabel + int(e));
    for (const auto& [l, c] : count)
      if (c == 1) out.push_back(l);
  } else {
    Term t = parse_term(n, std::string_view(eq).substr(arrow + 2), "the output");
    for (int k = 0; k <= int(t.letters.size()); ++k) {
      if (k == t.ellipsis_at)
        for (int64_t e = 0; e < ell_rank; ++e) out.push_back(kEllipsisLabel + int(e));
      if (k == int(t.letters.size())) break;
      const int l = t.letters[size_t(k)];
      if (!count.count(l)) user_error("{}: output letter '{}' is in no input term", n.desc(), char(l));
      if (std::count(t.letters.begin(), t.letters.end(), l) > 1)
        user_error("{}: output letter '{}' appears more than once", n.desc(), char(l));
      out.push_back(l);
    }
    if (t.ellipsis_at < 0 && ell_rank > 0)
      user_error("{}: the inputs' '...' stands for {} dim(s) but the output has no '...'", n.desc(), ell_rank);
  }

  // Sizes: one per label, where static; 1 broadcasts against a larger size (across operands only).
  std::map<int, std::pair<int64_t, size_t>> size;  // label -> (largest static size, an input that has it)
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t a = 0; a < ops[i].labels.size(); ++a) {
      const int l = ops[i].labels[a];
      const int64_t s = ops[i].sizes[a];
      for (size_t c = 0; c < a; ++c)
        if (ops[i].labels[c] == l && s >= 0 && ops[i].sizes[c] >= 0 && ops[i].sizes[c] != s)
          user_error("{}: index {} of input {} has sizes {} and {} (a repeated index takes a diagonal)", n.desc(),
                     label_name(l), i, ops[i].sizes[c], s);
      if (s < 0) continue;
      auto [it, fresh] = size.try_emplace(l, s, i);
      if (!fresh && s != it->second.first && s != 1 && it->second.first != 1)
        user_error("{}: index {} has size {} in input {} and {} in input {}", n.desc(), label_name(l),
                   it->second.first, it->second.second, s, i);
      if (s > it->second.first) it->second = {s, i};
    }

  Ein e{b, n};
  for (Operand& o : ops) {
    std::vector<int64_t> ones;  // size 1 where the label is larger elsewhere: broadcast, so dropped
    for (size_t a = 0; a < o.labels.size(); ++a)
      if (o.sizes[a] == 1 && size.count(o.labels[a]) && size[o.labels[a]].first > 1) ones.push_back(int64_t(a));
    e.drop(o, ones, OpKind::Squeeze);
    for (bool again = true; again;) {  // each repeated label: its diagonal
      again = false;
      for (int l : o.labels)
        if (std::count(o.labels.begin(), o.labels.end(), l) > 1) {
          e.diagonal(o, l), again = true;
          break;
        }
    }
  }
  // Labels that neither the output nor another operand has are summed where they are.
  for (size_t i = 0; i < ops.size(); ++i) {
    std::vector<int64_t> own;
    for (size_t a = 0; a < ops[i].labels.size(); ++a) {
      const int l = ops[i].labels[a];
      bool elsewhere = std::count(out.begin(), out.end(), l) > 0;
      for (size_t j = 0; j < ops.size() && !elsewhere; ++j)
        elsewhere = j != i && std::count(ops[j].labels.begin(), ops[j].labels.end(), l) > 0;
      if (!elsewhere) own.push_back(int64_t(a));
    }
    e.drop(ops[i], own, OpKind::ReduceSum);
  }
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::set<int> keep(out.begin(), out.end());
    for (size_t j = i + 1; j < ops.size(); ++j) keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    acc = e.contract(acc, ops[i], keep);
  }
  std::vector<int64_t> perm;
  for (int l : out) perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
  for (int64_t p : perm)
    if (p >= int64_t(acc.labels.size())) internal_error("{}: an output label was lost", n.desc());
  if (perm.size() != acc.labels.size()) internal_error("{}: labels were left unsummed", n.desc());
  bool same = true;
  for (size_t i = 0; i < perm.size(); ++i) same = same && perm[i] == int64_t(i);
  if (same) e.op(OpKind::Identity, {acc.v}, {}, n.outputs[0]);
  else e.op(OpKind::Transpose, {acc.v}, one_attr("perm", Attribute{perm}), n.outputs[0]);
}

constexpr RewriteRow kRows[] = {{"Einsum", einsum}};

}  // namespace

std::span<const RewriteRow> einsum_rewrites() { return kRows; }

}  // namespace kiln::rewrites
