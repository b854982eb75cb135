// Einsum as the importer lowers it (src/onnx/import_rewrites_einsum.cpp): models built in code, run in
// eager, compiled and reference mode against an fp64 loop evaluator written here with numpy.einsum's
// semantics (the onnx reference is numpy): a repeated index within an operand is its diagonal, a size-1
// dim broadcasts against a larger one, labels that only one operand has are summed within it first (so
// numpy gives inf * (1 + -2) = -inf, not inf - inf), then the products are summed over the rest. Then the
// refusals.
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "kiln/session.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

struct Result {
  std::vector<int64_t> shape;
  std::vector<double> v;
};

// numpy.einsum in plain loops. Labels: letters by their code, '...' dims 1000 + k (right-aligned).
Result reference(std::string eq, const std::vector<std::vector<int64_t>>& shapes,
                 const std::vector<std::vector<double>>& data) {
  std::erase(eq, ' ');
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow), cur;
  for (char c : lhs + ",") {
    if (c == ',') terms.push_back(cur), cur.clear();
    else cur += c;
  }
  auto letters = [](const std::string& t) {
    return int64_t(std::count_if(t.begin(), t.end(), [](char c) { return std::isalpha((unsigned char)c); }));
  };
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].find("...") != std::string::npos) ell = std::max(ell, int64_t(shapes[i].size()) - letters(terms[i]));
  auto expand = [&](const std::string& t, int64_t dims) {
    std::vector<int> out;
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k] == '.') {
        for (int64_t e = ell - dims; e < ell; ++e) out.push_back(1000 + int(e));
        k += 2;
      } else {
        out.push_back(t[k]);
      }
    }
    return out;
  };
  std::vector<std::vector<int>> labels;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    labels.push_back(expand(terms[i], int64_t(shapes[i].size()) - letters(terms[i])));
    for (char c : terms[i])
      if (std::isalpha((unsigned char)c)) ++count[c];
  }
  std::vector<int> out;
  if (arrow == std::string::npos) {
    for (int64_t e = 0; e < ell; ++e) out.push_back(1000 + int(e));
    for (auto [l, c] : count)
      if (c == 1) out.push_back(l);
  } else {
    out = expand(eq.substr(arrow + 2), ell);
  }
  std::map<int, int64_t> size;
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t a = 0; a < labels[i].size(); ++a) size[labels[i][a]] = std::max(size[labels[i][a]], shapes[i][a]);
  // present: the operand has the label at its full size (a size-1 dim against a larger one broadcasts).
  auto present = [&](size_t i, int l) {
    for (size_t a = 0; a < labels[i].size(); ++a)
      if (labels[i][a] == l && shapes[i][a] == size[l]) return true;
    return false;
  };
  // Iterates every assignment of `ls`, calling f with label -> index.
  auto each = [&](const std::vector<int>& ls, auto&& f) {
    std::map<int, int64_t> at;
    for (int l : ls) at[l] = 0;
    for (int l : ls)
      if (size[l] == 0) return;
    for (;;) {
      f(at);
      size_t k = ls.size();
      while (k > 0 && ++at[ls[k - 1]] == size[ls[k - 1]]) at[ls[k - 1]] = 0, --k;
      if (k == 0) return;
    }
  };
  // Each operand with its own labels summed: a function of its kept labels.
  std::vector<std::vector<int>> kept(labels.size());
  std::vector<std::map<std::vector<int64_t>, double>> reduced(labels.size());
  std::set<int> all;
  for (size_t i = 0; i < labels.size(); ++i) {
    std::vector<int> own;
    for (int l : std::set<int>(labels[i].begin(), labels[i].end())) {
      if (!present(i, l)) continue;
      bool elsewhere = std::count(out.begin(), out.end(), l) > 0;
      for (size_t j = 0; j < labels.size(); ++j) elsewhere = elsewhere || (j != i && present(j, l));
      (elsewhere ? kept[i] : own).push_back(l);
    }
    all.insert(kept[i].begin(), kept[i].end());
    each(kept[i], [&](std::map<int, int64_t>& k_at) {
      double s = 0;
      each(own, [&](std::map<int, int64_t>& o_at) {
        int64_t flat = 0;
        for (size_t a = 0; a < labels[i].size(); ++a) {
          const int l = labels[i][a];
          int64_t idx = shapes[i][a] != size[l] ? 0 : k_at.count(l) ? k_at[l] : o_at[l];
          flat = flat * shapes[i][a] + idx;
        }
        s += data[i][size_t(flat)];
      });
      std::vector<int64_t> key;
      for (int l : kept[i]) key.push_back(k_at[l]);
      reduced[i][key] = s;
    });
  }
  Result r;
  int64_t numel = 1;
  for (int l : out) r.shape.push_back(size[l]), numel *= size[l];
  r.v.assign(size_t(numel), 0.0);
  std::vector<int> every(all.begin(), all.end());
  for (int l : out)
    if (!all.count(l)) every.push_back(l);
  each(every, [&](std::map<int, int64_t>& at) {
    double p = 1;
    for (size_t i = 0; i < labels.size(); ++i) {
      std::vector<int64_t> key;
      for (int l : kept[i]) key.push_back(at[l]);
      p *= reduced[i][key];
    }
    int64_t flat = 0;
    for (size_t k = 0; k < out.size(); ++k) flat = flat * size[out[k]] + at[out[k]];
    r.v[size_t(flat)] += p;
  });
  return r;
}

// The loop against numpy.einsum's own results (input i: (arange + 1 + 10 i) * (-1)^i, printed by numpy 1.24).
TEST(EinsumImport, TheLoopIsNumpy) {
  struct Known {
    std::string eq;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> shape;
    std::vector<double> want;
  };
  const Known known[] = {
      {"...ii,...i->...i", {{2, 1, 2, 2}, {3, 2}}, {2, 3, 2}, {-11, -48, -13, -56, -15, -64, -55, -96, -65, -112, -75, -128}},
      {"ca,Ab", {{2, 1}, {1, 2}}, {1, 1, 2, 2}, {-11, -22, -12, -24}},
      {"ij,jk", {{2, 1}, {3, 2}}, {2, 2}, {-39, -42, -78, -84}},
      {"iji->j", {{2, 3, 2}}, {3}, {9, 13, 17}},
      {"bij,bjk->bk", {{1, 2, 2}, {2, 2, 1}}, {2, 1}, {-116, -136}},
  };
  for (const Known& k : known) {
    std::vector<std::vector<double>> data;
    for (size_t i = 0; i < k.shapes.size(); ++i) {
      int64_t numel = 1;
      for (int64_t d : k.shapes[i]) numel *= d;
      std::vector<double> v;
      for (int64_t j = 0; j < numel; ++j) v.push_back(double(j + 1 + 10 * int64_t(i)) * (i % 2 ? -1 : 1));
      data.push_back(v);
    }
    Result r = reference(k.eq, k.shapes, data);
    EXPECT_EQ(r.shape, k.shape) << k.eq;
    EXPECT_EQ(r.v, k.want) << k.eq;
  }
}

// inputs x0, x1, ... of `shapes` (a dim of -1: symbolic, named d<input>_<axis>), one Einsum, output y.
::onnx::ModelProto build(const std::string& eq, const std::vector<std::vector<int64_t>>& shapes,
                         int elem = ::onnx::TensorProto::FLOAT) {
  auto m = make_model(12);
  std::vector<std::string> ins;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<TestDim> dims;
    for (size_t a = 0; a < shapes[i].size(); ++a) {
      if (shapes[i][a] < 0) dims.push_back("d" + std::to_string(i) + "_" + std::to_string(a));
      else dims.push_back(shapes[i][a]);
    }
    ins.push_back("x" + std::to_string(i));
    add_input(m, ins.back(), dims, elem);
  }
  auto* node = add_node(m, "Einsum", ins, {"y"}, "ein");
  auto* a = node->add_attribute();
  a->set_name("equation"), a->set_type(::onnx::AttributeProto::STRING), a->set_s(eq);
  add_output(m, "y");
  return m;
}

struct Case {
  std::string eq;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<int64_t>> declared = {};  // the model's shapes where they differ (symbolic dims)
};

std::vector<std::vector<double>> random_inputs(const Case& c, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<double>> d;
  for (const auto& s : c.shapes) {
    int64_t numel = 1;
    for (int64_t x : s) numel *= x;
    std::vector<double> v(static_cast<size_t>(numel));
    for (double& x : v) x = double(nd(rng));  // values f32 holds exactly
    if (specials)
      for (size_t k = 0; k < v.size(); k += 5)
        v[k] = k % 3 == 0 ? std::numeric_limits<double>::quiet_NaN()
                          : (k % 2 ? 1 : -1) * std::numeric_limits<double>::infinity();
    d.push_back(std::move(v));
  }
  return d;
}

void check(const Case& c, Mode mode, uint32_t seed, bool specials = false) {
  SCOPED_TRACE(c.eq + " mode " + std::to_string(int(mode)));
  auto data = random_inputs(c, seed, specials);
  Result want = reference(c.eq, c.shapes, data);
  Session s = Session::from_graph(import_model(build(c.eq, c.declared.empty() ? c.shapes : c.declared)), mode, Options{});
  std::map<std::string, Tensor> in;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    std::vector<float> f(data[i].begin(), data[i].end());
    in["x" + std::to_string(i)] = Tensor::from_vector<float>(DType::f32, c.shapes[i], f);
  }
  Tensor got = s.run(in).at("y");
  ASSERT_EQ(got.shape(), want.shape);
  const double tol = mode == Mode::reference ? 1e-12 : 1e-5;
  int bad = 0;
  for (size_t i = 0; i < want.v.size() && bad < 5; ++i) {
    const double g = got.as_double(int64_t(i)), w = want.v[i];
    const bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= tol * (1 + std::fabs(w));
    bad += !ok;
    EXPECT_TRUE(ok) << "[" << i << "]: got " << g << ", want " << w;
  }
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"a...b,b...c->a...c", {{2, 3, 4, 5}, {5, 4, 6}}},    // '...' in the middle, broadcast [3,4] with [4]
      {"...ij,...jk", {{2, 1, 3, 4}, {5, 4, 2}}},           // implicit: '...' first, then i, k
      {"ca,Ab", {{2, 3}, {4, 5}}},                          // implicit order is ASCII: A, a, b, c
      {"ba,cb", {{3, 4}, {2, 3}}},                          // implicit: a, c
      {"ii->i", {{4, 4}}},                                  // diagonal
      {"ii", {{4, 4}}},                                     // trace, a scalar
      {"iji->j", {{3, 2, 3}}},                              // diagonal of axes 0 and 2
      {"ijji->ij", {{2, 3, 3, 2}}},                         // two diagonals
      {"iii->i", {{3, 3, 3}}},                              // a triple index
      {"ij,ij->", {{3, 4}, {3, 4}}},                        // scalar output
      {"->", {{}}},                                         // scalar input
      {",i->i", {{}, {5}}},                                 // a scalar operand
      {"i->", {{6}}},
      {"ij,jk->ik", {{2, 1}, {3, 4}}},                      // size 1 broadcasts against 3 (summed in x1)
      {"ij,jk", {{1, 1}, {1, 1}}},                          // every dim 1
      {"i,i->i", {{1}, {5}}},
      {"bij,bjk->bik", {{1, 2, 3}, {4, 3, 2}}},             // batch 1 against 4
      {"...ii,...i->...i", {{2, 1, 3, 3}, {4, 3}}},         // a diagonal with '...' broadcasting
      {"ij,ij->ij", {{3, 4}, {3, 4}}},                      // nothing summed: a product
      {"i,j->ij", {{3}, {4}}},                              // outer product
      {"bij,bjk->bk", {{2, 3, 4}, {2, 4, 5}}},              // i summed within x0 first
      {"abcd,cdbe->ae", {{2, 3, 4, 5}, {4, 5, 3, 2}}},      // three labels summed in one product
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},           // three operands
      {"i,i,i->i", {{4}, {4}, {4}}},
      {"abc->cab", {{2, 3, 4}}},                            // a transpose
      {" b i j , b j k -> b i k ", {{2, 3, 4}, {2, 4, 5}}},  // spaces
      {"bij,bjk->bik", {{3, 2, 4}, {3, 4, 5}}, {{-1, 2, -1}, {-1, 4, 5}}},  // symbolic dims
      {"...ii->...i", {{2, 3, 3}}, {{-1, 3, 3}}},
      {"i,j->", {{0}, {3}}},                                // an empty dim
  };
  return all;
}

TEST(EinsumImport, EquationsMatchTheLoopInEveryMode) {
  uint32_t seed = 1;
  for (const Case& c : cases())
    for (Mode mode : {Mode::eager, Mode::compiled, Mode::reference}) check(c, mode, seed++);
}

// NaN and infinities where the sums and products are numpy's: one or two operands (a third would be
// multiplied into the sum of the first two's products, where numpy multiplies each product).
TEST(EinsumImport, NanAndInfinityAsNumpy) {
  uint32_t seed = 500;
  for (const Case& c : cases())
    if (c.shapes.size() <= 2)
      for (Mode mode : {Mode::eager, Mode::reference}) check(c, mode, seed++, true);
}

// numpy sums a label that only one operand has within it first: inf * (1 + -2) = -inf, where the sum of
// the products would be inf - inf = NaN.
TEST(EinsumImport, OwnLabelsAreSummedFirst) {
  auto m = build("ij,jk->ik", {{1, 1}, {2, 1}});
  Session s = Session::from_graph(import_model(m), Mode::eager, Options{});
  auto y = s.run({{"x0", Tensor::from_vector<float>(DType::f32, {1, 1}, {std::numeric_limits<float>::infinity()})},
                  {"x1", Tensor::from_vector<float>(DType::f32, {2, 1}, {1.0f, -2.0f})}})
               .at("y");
  ASSERT_EQ(y.numel(), 1);
  EXPECT_EQ(y.as_double(0), -std::numeric_limits<double>::infinity());
}

TEST(EinsumImport, BatchMatmulIsOneMatMul) {
  Graph g = import_model(build("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}));
  int matmuls = 0;
  for (const Node& n : g.nodes) {
    matmuls += n.op == OpKind::MatMul;
    EXPECT_NE(n.op, OpKind::Reshape) << "the operands are in [batch, M, K] form already";
    EXPECT_NE(n.op, OpKind::Mul);
  }
  EXPECT_EQ(matmuls, 1);
  Graph diag = import_model(build("...ii->...i", {{2, 3, 3}}));
  EXPECT_NE(find_node(diag, OpKind::Gather), nullptr);
  EXPECT_EQ(find_node(diag, OpKind::MatMul), nullptr);
}

TEST(EinsumImport, F64AndBf16) {
  for (int elem : {::onnx::TensorProto::DOUBLE, ::onnx::TensorProto::BFLOAT16}) {
    Session s = Session::from_graph(import_model(build("ij,jk->ki", {{2, 3}, {3, 2}}, elem)), Mode::eager, Options{});
    const DType t = elem == ::onnx::TensorProto::DOUBLE ? DType::f64 : DType::bf16;
    Tensor a = Tensor::from_vector<float>(t, {2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor b = Tensor::from_vector<float>(t, {3, 2}, {1, 0, 0, 1, 1, 1});
    Tensor y = s.run({{"x0", a}, {"x1", b}}).at("y");
    ASSERT_EQ(y.dtype(), t);
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
    // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[4,5],[10,11]], transposed.
    const double want[] = {4, 10, 5, 11};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y.as_double(i), want[i]) << i;
  }
}

TEST(EinsumImport, Refusals) {
  expect_user_error(build("ij,jk->ik", {{2, 3}}), "node 'ein' (Einsum-12): the equation 'ij,jk->ik' has 2 input term(s) but the node has 1 input(s)");
  expect_user_error(build("ij", {{2, 3}, {3}}), "has 1 input term(s) but the node has 2");
  expect_user_error(build("ij->i", {{2, 3, 4}}), "input 0 has rank 3 but the equation gives it 2 letters");
  expect_user_error(build("ijkl...->i", {{2, 3, 4}}), "input 0 has rank 3 but the equation gives it 4 letters and '...'");
  expect_user_error(build("i$j", {{2, 3}}), "input 0 of the equation has the character '$'");
  expect_user_error(build("ij->i1", {{2, 3}}), "the output of the equation has the character '1'");
  expect_user_error(build("i.j", {{2, 3}}), "a '.' that is not part of '...'");
  expect_user_error(build("...i...", {{2, 3}}), "has '...' twice");
  expect_user_error(build("ij->i->j", {{2, 3}}), "has '->' twice");
  expect_user_error(build("i-j", {{2, 3}}), "the character '-'");
  expect_user_error(build("ij,jk->ik", {{2, 3}, {4, 5}}), "index 'j' has size 3 in input 0 and 4 in input 1");
  expect_user_error(build("...i,...i->...i", {{2, 3}, {4, 3}}), "index '...' dim 0 has size 2 in input 0 and 4 in input 1");
  expect_user_error(build("ii->i", {{2, 3}}), "index 'i' of input 0 has sizes 2 and 3");
  expect_user_error(build("ii->i", {{1, 3}}), "index 'i' of input 0 has sizes 1 and 3");  // numpy refuses it too
  expect_user_error(build("ij->k", {{2, 3}}), "output letter 'k' is in no input term");
  expect_user_error(build("ij->ii", {{2, 3}}), "output letter 'i' appears more than once");
  expect_user_error(build("...i->i", {{2, 3}}), "the inputs' '...' stands for 1 dim(s) but the output has no '...'");
  EXPECT_NO_THROW(import_model(build("...i->i", {{3}})));  // '...' of no dims need not be in the output

  auto no_eq = build("ij", {{2, 3}});
  no_eq.mutable_graph()->mutable_node(0)->clear_attribute();
  expect_user_error(no_eq, "attribute 'equation' is required");
  auto extra = build("ij", {{2, 3}});
  attr_int(extra.mutable_graph()->mutable_node(0), "axis", 1);
  expect_user_error(extra, "unknown attribute 'axis'");

  // '...' needs the operand's rank at import: an input computed by another node has none.
  auto computed = build("...i->i", {{2, 3}});
  computed.mutable_graph()->mutable_input(0)->set_name("x0_in");
  auto* neg = computed.mutable_graph()->add_node();
  neg->set_op_type("Neg"), neg->add_input("x0_in"), neg->add_output("x0");
  computed.mutable_graph()->mutable_node()->SwapElements(0, 1);
  try {
    import_model(computed);
    ADD_FAILURE() << "imported";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 has '...' in the equation but its rank is not known at import"),
              std::string::npos)
        << e.what();
  }
  // Without '...' the letters give the rank.
  auto computed_letters = build("ij->ji", {{2, 3}});
  computed_letters.mutable_graph()->mutable_input(0)->set_name("x0_in");
  auto* neg2 = computed_letters.mutable_graph()->add_node();
  neg2->set_op_type("Neg"), neg2->add_input("x0_in"), neg2->add_output("x0");
  computed_letters.mutable_graph()->mutable_node()->SwapElements(0, 1);
  Session s = Session::from_graph(import_model(computed_letters), Mode::eager, Options{});
  Tensor y = s.run({{"x0_in", Tensor::from_vector<float>(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6})}}).at("y");
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(y.as_double(1), -4.0);
}

}  // namespace
}  // namespace kiln::testing
