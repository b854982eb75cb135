// RNN, GRU and LSTM as the importer unrolls them (src/onnx/import_rewrites_recurrent.cpp): models built
// in code, run in eager (and reference, compiled) mode against an fp64 loop of the recurrence written
// here, which follows the onnx reference evaluator (sequence_lens as a mask: a batch past its length keeps
// its state and outputs zeros; the reverse direction runs from the last step down). Then the refusals.
#include <cctype>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <random>

#include "kiln/session.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;

struct Spec {
  std::string op = "LSTM";  // RNN, GRU, LSTM
  std::string direction = "forward";
  int64_t layout = 0, seq = 4, batch = 3, input = 2, hidden = 3, opset = 22;
  bool bias = true, h0 = false, c0 = false, peep = false;
  std::vector<int64_t> lens;       // sequence_lens when not empty
  std::vector<std::string> acts;   // the activations attribute when not empty
  std::optional<float> clip;
  int64_t lbr = 0, input_forget = 0;
  bool y = true, yh = true, yc = true;

  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  bool lstm() const { return op == "LSTM"; }
  std::vector<int64_t> x_shape() const {
    return layout == 0 ? std::vector<int64_t>{seq, batch, input} : std::vector<int64_t>{batch, seq, input};
  }
  std::vector<int64_t> state_shape() const {
    return layout == 0 ? std::vector<int64_t>{dirs(), batch, hidden} : std::vector<int64_t>{batch, dirs(), hidden};
  }
};

using Data = std::map<std::string, std::vector<float>>;

std::vector<TestDim> dims_of(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// The model: every tensor a graph input, so nothing folds away.
::onnx::ModelProto build(const Spec& s) {
  auto m = make_model(s.opset);
  const int64_t D = s.dirs(), G = s.gates(), H = s.hidden;
  add_input(m, "X", dims_of(s.x_shape()));
  add_input(m, "W", dims_of({D, G * H, s.input}));
  add_input(m, "R", dims_of({D, G * H, H}));
  std::vector<std::string> ins{"X", "W", "R"};
  auto opt = [&](bool have, const std::string& name, std::vector<int64_t> shape, int elem = TP::FLOAT) {
    ins.push_back(have ? name : "");
    if (have) add_input(m, name, dims_of(shape), elem);
  };
  opt(s.bias, "B", {D, 2 * G * H});
  opt(!s.lens.empty(), "sequence_lens", {s.batch}, TP::INT32);
  opt(s.h0, "initial_h", s.state_shape());
  if (s.lstm()) {
    opt(s.c0, "initial_c", s.state_shape());
    opt(s.peep, "P", {D, 3 * H});
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::vector<std::string> outs{s.y ? "Y" : "", s.yh ? "Y_h" : ""};
  if (s.lstm()) outs.push_back(s.yc ? "Y_c" : "");
  while (outs.back().empty()) outs.pop_back();
  auto* node = add_node(m, s.op, ins, outs, "rec");
  attr_int(node, "hidden_size", H);
  if (s.direction != "forward") {
    auto* a = node->add_attribute();
    a->set_name("direction"), a->set_type(::onnx::AttributeProto::STRING), a->set_s(s.direction);
  }
  if (s.layout) attr_int(node, "layout", s.layout);
  if (!s.acts.empty()) {
    auto* a = node->add_attribute();
    a->set_name("activations"), a->set_type(::onnx::AttributeProto::STRINGS);
    for (const auto& x : s.acts) a->add_strings(x);
  }
  if (s.clip) attr_float(node, "clip", *s.clip);
  if (s.op == "GRU" && s.lbr) attr_int(node, "linear_before_reset", s.lbr);
  if (s.lstm() && s.input_forget) attr_int(node, "input_forget", s.input_forget);
  for (const auto& o : outs)
    if (!o.empty()) add_output(m, o);
  return m;
}

Data random_data(const Spec& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.6f);
  auto fill = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = nd(rng);
    return v;
  };
  const int64_t D = s.dirs(), G = s.gates(), H = s.hidden;
  Data d;
  d["X"] = fill(s.seq * s.batch * s.input);
  d["W"] = fill(D * G * H * s.input);
  d["R"] = fill(D * G * H * H);
  if (s.bias) d["B"] = fill(D * 2 * G * H);
  if (s.h0) d["initial_h"] = fill(D * s.batch * H);
  if (s.lstm() && s.c0) d["initial_c"] = fill(D * s.batch * H);
  if (s.lstm() && s.peep) d["P"] = fill(D * 3 * H);
  return d;
}

double act(std::string name, double x, std::optional<float> clip) {
  name[0] = char(std::toupper(static_cast<unsigned char>(name[0])));
  if (clip && !std::isnan(x)) x = std::min(std::max(x, -double(*clip)), double(*clip));
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::isnan(x) ? x : std::max(x, 0.0);
  if (name == "Softsign") return x / (1 + std::fabs(x));
  if (name == "Softplus") return std::log1p(std::exp(x));
  ADD_FAILURE() << "no reference for " << name;
  return 0;
}

struct Outputs {
  std::vector<double> y, yh, yc;  // in the model's layout
};

// The recurrence as plain loops in fp64, on the f32 inputs.
Outputs reference(const Spec& s, const Data& d) {
  const int64_t S = s.seq, Bn = s.batch, I = s.input, H = s.hidden, D = s.dirs(), G = s.gates();
  const size_t na = s.op == "RNN" ? 1 : s.op == "GRU" ? 2 : 3;
  std::vector<std::string> acts = s.acts;
  if (acts.empty())
    acts = s.op == "RNN" ? std::vector<std::string>{"Tanh"}
           : s.op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                           : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  if (acts.size() == na && D == 2) {
    std::vector<std::string> once = acts;
    acts.insert(acts.end(), once.begin(), once.end());
  }
  auto get = [&](const char* k) -> const std::vector<float>* { return d.count(k) ? &d.at(k) : nullptr; };
  const auto &X = d.at("X"), &W = d.at("W"), &R = d.at("R");
  const auto *Bv = get("B"), *h0 = get("initial_h"), *c0 = get("initial_c"), *P = get("P");
  auto x_at = [&](int64_t t, int64_t b, int64_t i) {
    return double(s.layout == 0 ? X[size_t((t * Bn + b) * I + i)] : X[size_t((b * S + t) * I + i)]);
  };
  auto st = [&](int64_t dir, int64_t b) { return s.layout == 0 ? (dir * Bn + b) * H : (b * D + dir) * H; };
  Outputs o;
  o.y.assign(size_t(S * D * Bn * H), 0.0);
  o.yh.assign(size_t(D * Bn * H), 0.0);
  o.yc.assign(size_t(D * Bn * H), 0.0);
  for (int64_t dir = 0; dir < D; ++dir) {
    const bool rev = s.direction == "reverse" || dir == 1;
    const std::string *f = &acts[size_t(dir) * na], *g = na > 1 ? f + 1 : f, *hh = na > 2 ? f + 2 : f;
    auto w = [&](int64_t row, int64_t i) { return double(W[size_t((dir * G * H + row) * I + i)]); };
    auto r = [&](int64_t row, int64_t j) { return double(R[size_t((dir * G * H + row) * H + j)]); };
    auto wb = [&](int64_t k) { return Bv ? double((*Bv)[size_t(dir * 2 * G * H + k)]) : 0.0; };
    auto rb = [&](int64_t k) { return wb(G * H + k); };
    for (int64_t b = 0; b < Bn; ++b) {
      std::vector<double> h(size_t(H), 0.0), c(size_t(H), 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (h0) h[size_t(j)] = (*h0)[size_t(st(dir, b) + j)];
        if (c0) c[size_t(j)] = (*c0)[size_t(st(dir, b) + j)];
      }
      const int64_t len = s.lens.empty() ? S : s.lens[size_t(b)];
      for (int64_t k = 0; k < S; ++k) {
        const int64_t t = rev ? S - 1 - k : k;
        if (t >= len) continue;  // masked: the state stays, Y is 0
        auto xw = [&](int64_t row) {
          double v = 0;
          for (int64_t i = 0; i < I; ++i) v += x_at(t, b, i) * w(row, i);
          return v;
        };
        auto hr = [&](int64_t row, const std::vector<double>& hv) {
          double v = 0;
          for (int64_t j = 0; j < H; ++j) v += hv[size_t(j)] * r(row, j);
          return v;
        };
        std::vector<double> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
        if (s.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) hn[size_t(j)] = act(*f, xw(j) + hr(j, h) + wb(j) + rb(j), s.clip);
        } else if (s.op == "GRU") {
          std::vector<double> z(static_cast<size_t>(H)), rr(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = act(*f, xw(j) + hr(j, h) + wb(j) + rb(j), s.clip);
            rr[size_t(j)] = act(*f, xw(H + j) + hr(H + j, h) + wb(H + j) + rb(H + j), s.clip);
          }
          for (int64_t j = 0; j < H; ++j) rh[size_t(j)] = rr[size_t(j)] * h[size_t(j)];
          for (int64_t j = 0; j < H; ++j) {
            const int64_t row = 2 * H + j;
            double pre = s.lbr ? xw(row) + wb(row) + rr[size_t(j)] * (hr(row, h) + rb(row))
                               : xw(row) + hr(row, rh) + wb(row) + rb(row);
            double cand = act(*g, pre, s.clip);
            hn[size_t(j)] = (1 - z[size_t(j)]) * cand + z[size_t(j)] * h[size_t(j)];
          }
        } else {
          auto p = [&](int64_t gate, int64_t j) { return P ? double((*P)[size_t(dir * 3 * H + gate * H + j)]) : 0.0; };
          for (int64_t j = 0; j < H; ++j) {
            auto pre = [&](int64_t gate) {
              const int64_t row = gate * H + j;
              return xw(row) + hr(row, h) + wb(row) + rb(row);
            };
            double i = act(*f, pre(0) + p(0, j) * c[size_t(j)], s.clip);
            double fg = s.input_forget ? 1 - i : act(*f, pre(2) + p(2, j) * c[size_t(j)], s.clip);
            double cand = act(*g, pre(3), s.clip);
            cn[size_t(j)] = fg * c[size_t(j)] + i * cand;
            double og = act(*f, pre(1) + p(1, j) * cn[size_t(j)], s.clip);
            hn[size_t(j)] = og * act(*hh, cn[size_t(j)], s.clip);
          }
        }
        h = hn;
        if (s.lstm()) c = cn;
        for (int64_t j = 0; j < H; ++j) {
          const int64_t at = s.layout == 0 ? ((t * D + dir) * Bn + b) * H + j : ((b * S + t) * D + dir) * H + j;
          o.y[size_t(at)] = h[size_t(j)];
        }
      }
      for (int64_t j = 0; j < H; ++j)
        o.yh[size_t(st(dir, b) + j)] = h[size_t(j)], o.yc[size_t(st(dir, b) + j)] = c[size_t(j)];
    }
  }
  return o;
}

std::map<std::string, Tensor> run(const Spec& s, const Data& d, Mode mode, const Options& opts = Options{}) {
  Session session = Session::from_graph(import_model(build(s)), mode, opts);
  std::map<std::string, Tensor> in;
  const int64_t D = s.dirs(), G = s.gates(), H = s.hidden;
  in["X"] = Tensor::from_vector<float>(DType::f32, s.x_shape(), d.at("X"));
  in["W"] = Tensor::from_vector<float>(DType::f32, {D, G * H, s.input}, d.at("W"));
  in["R"] = Tensor::from_vector<float>(DType::f32, {D, G * H, H}, d.at("R"));
  if (s.bias) in["B"] = Tensor::from_vector<float>(DType::f32, {D, 2 * G * H}, d.at("B"));
  if (!s.lens.empty()) in["sequence_lens"] = Tensor::from_vector<int64_t>(DType::i32, {s.batch}, s.lens);
  if (s.h0) in["initial_h"] = Tensor::from_vector<float>(DType::f32, s.state_shape(), d.at("initial_h"));
  if (s.lstm() && s.c0) in["initial_c"] = Tensor::from_vector<float>(DType::f32, s.state_shape(), d.at("initial_c"));
  if (s.lstm() && s.peep) in["P"] = Tensor::from_vector<float>(DType::f32, {D, 3 * H}, d.at("P"));
  return session.run(in);
}

// Elementwise within tolerance; NaN meets NaN and an infinity the same infinity.
void expect_close(const Tensor& got, const std::vector<double>& want, const std::vector<int64_t>& shape,
                  const std::string& what, double tol) {
  ASSERT_EQ(got.shape(), shape) << what;
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    double g = got.as_double(i), w = want[size_t(i)];
    bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= tol * (1 + std::fabs(w));
    if (!ok) ++bad;
    EXPECT_TRUE(ok) << what << "[" << i << "]: got " << g << ", want " << w;
  }
}

void check(const Spec& s, uint32_t seed, Mode mode = Mode::eager, const Data* given = nullptr) {
  Data d = given ? *given : random_data(s, seed);
  Outputs want = reference(s, d);
  auto out = run(s, d, mode);
  const double tol = mode == Mode::reference ? 1e-9 : 2e-5;
  const int64_t D = s.dirs();
  std::vector<int64_t> y_shape = s.layout == 0 ? std::vector<int64_t>{s.seq, D, s.batch, s.hidden}
                                               : std::vector<int64_t>{s.batch, s.seq, D, s.hidden};
  const std::string what = s.op + " " + s.direction + " layout " + std::to_string(s.layout) + " ";
  if (s.y) expect_close(out.at("Y"), want.y, y_shape, what + "Y", tol);
  if (s.yh) expect_close(out.at("Y_h"), want.yh, s.state_shape(), what + "Y_h", tol);
  if (s.lstm() && s.yc) expect_close(out.at("Y_c"), want.yc, s.state_shape(), what + "Y_c", tol);
}

TEST(RecurrentImport, EveryCellDirectionAndLayoutMatchesTheLoop) {
  uint32_t seed = 1;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1}) {
        Spec s;
        s.op = op, s.direction = dir, s.layout = layout;
        s.h0 = s.c0 = s.peep = true;
        check(s, seed++);
      }
}

TEST(RecurrentImport, SequenceLensShorterThanTheSequenceMaskEachBatch) {
  uint32_t seed = 100;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1}) {
        Spec s;
        s.op = op, s.direction = dir, s.layout = layout, s.seq = 5, s.batch = 4;
        s.lens = {5, 2, 1, 0};  // full, shorter, one step, none (Y_h is initial_h, as the onnx reference has it)
        s.h0 = s.c0 = s.peep = true;
        check(s, seed++);
      }
  // The masked outputs are zeros and Y_h is the state at each batch's last valid step: a batch's result does
  // not depend on what X holds past its length.
  Spec s;
  s.op = "GRU", s.direction = "bidirectional", s.seq = 4, s.batch = 2, s.lens = {4, 2};
  Data d = random_data(s, 7);
  auto a = run(s, d, Mode::eager);
  for (int64_t t = 2; t < 4; ++t)
    for (int64_t i = 0; i < s.input; ++i) d["X"][size_t((t * s.batch + 1) * s.input + i)] = 1e3f;
  auto b = run(s, d, Mode::eager);
  for (int64_t j = 0; j < 2 * s.hidden; ++j) {
    const int64_t dir = j / s.hidden, k = j % s.hidden, at = (dir * s.batch + 1) * s.hidden + k;
    EXPECT_EQ(a.at("Y_h").as_double(at), b.at("Y_h").as_double(at)) << j;
  }
  for (int64_t t = 2; t < 4; ++t)
    for (int64_t dir = 0; dir < 2; ++dir)
      for (int64_t k = 0; k < s.hidden; ++k)
        EXPECT_EQ(b.at("Y").as_double(((t * 2 + dir) * s.batch + 1) * s.hidden + k), 0.0);
}

TEST(RecurrentImport, SizeOneDimensions) {
  uint32_t seed = 200;
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (const char* dir : {"forward", "bidirectional"}) {
      Spec s;
      s.op = op, s.direction = dir, s.seq = 1, s.batch = 1, s.input = 1, s.hidden = 1;
      s.h0 = true;
      check(s, seed++);
      s.lens = {1};
      check(s, seed++);
    }
}

TEST(RecurrentImport, GruLinearBeforeResetLstmInputForgetClipAndActivations) {
  uint32_t seed = 300;
  for (int64_t lbr : {0, 1}) {
    Spec s;
    s.op = "GRU", s.lbr = lbr, s.h0 = true, s.direction = "bidirectional";
    check(s, seed++);
    s.acts = {"Relu", "Softsign", "Softplus", "Tanh"};  // per direction
    s.clip = 0.7f;
    check(s, seed++);
  }
  Spec lstm;
  lstm.input_forget = 1, lstm.peep = lstm.c0 = true;
  check(lstm, seed++);
  lstm.acts = {"sigmoid", "relu", "softsign"};  // one set for the direction; names in any case
  lstm.clip = 0.5f;
  check(lstm, seed++);
  Spec rnn;
  rnn.op = "RNN", rnn.acts = {"Relu"}, rnn.direction = "bidirectional";  // one set that both directions take
  check(rnn, seed++);
}

TEST(RecurrentImport, OmittedOutputsAndInputsAndOlderVersions) {
  uint32_t seed = 400;
  for (int64_t opset : {7, 14}) {
    Spec s;
    s.opset = opset, s.bias = false, s.y = false, s.yc = false;
    check(s, seed++);
    s.op = "GRU", s.yh = false, s.y = true;
    check(s, seed++);
  }
}

TEST(RecurrentImport, NanAndInfinityPropagateAsInTheLoop) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    Spec s;
    s.op = op, s.seq = 4, s.batch = 3, s.lens = {4, 3, 1};
    Data d = random_data(s, 500);
    const int64_t I = s.input;
    d["X"][size_t((1 * s.batch + 0) * I)] = std::numeric_limits<float>::quiet_NaN();  // t 1, batch 0
    d["X"][size_t((0 * s.batch + 1) * I)] = std::numeric_limits<float>::infinity();   // t 0, batch 1
    d["X"][size_t((2 * s.batch + 2) * I)] = std::numeric_limits<float>::quiet_NaN();  // batch 2, past its length
    Outputs want = reference(s, d);
    EXPECT_TRUE(std::isnan(want.yh[0])) << op;         // the NaN reaches the final state
    EXPECT_FALSE(std::isnan(want.yh[2 * s.hidden])) << op;  // a NaN past the length does not
    check(s, 0, Mode::eager, &d);
    s.clip = 1.0f;
    check(s, 0, Mode::eager, &d);
  }
}

TEST(RecurrentImport, ReferenceAndCompiledModes) {
  Spec s;
  s.direction = "bidirectional", s.h0 = s.c0 = s.peep = true, s.lens = {4, 2, 3}, s.layout = 1;
  check(s, 600, Mode::reference);
  check(s, 600, Mode::compiled);
  s.op = "GRU", s.lbr = 1;
  check(s, 601, Mode::reference);
}

// Exporters store W, R and B as initializers: the per-direction slices and transposes fold at compile time.
TEST(RecurrentImport, WeightsAsInitializers) {
  for (const char* op : {"GRU", "LSTM"})
    for (Mode mode : {Mode::eager, Mode::compiled}) {
      Spec s;
      s.op = op, s.direction = "bidirectional", s.lbr = 1;
      Data d = random_data(s, 700);
      Outputs want = reference(s, d);
      auto m = build(s);
      auto* inputs = m.mutable_graph()->mutable_input();
      const int64_t D = s.dirs(), G = s.gates(), H = s.hidden;
      inputs->erase(inputs->begin() + 1, inputs->begin() + 4);  // W, R, B
      add_f32_init(m, "W", {D, G * H, s.input}, d.at("W"));
      add_f32_init(m, "R", {D, G * H, H}, d.at("R"));
      add_f32_init(m, "B", {D, 2 * G * H}, d.at("B"));
      Session session = Session::from_graph(import_model(m), mode, Options{});
      auto out = session.run({{"X", Tensor::from_vector<float>(DType::f32, s.x_shape(), d.at("X"))}});
      expect_close(out.at("Y"), want.y, {s.seq, D, s.batch, H}, std::string(op) + " Y", 2e-5);
      expect_close(out.at("Y_h"), want.yh, s.state_shape(), std::string(op) + " Y_h", 2e-5);
    }
}

TEST(RecurrentImport, OneProductOfXForAllStepsThenOnePerStep) {
  Spec s;
  s.op = "RNN", s.seq = 6;
  Graph g = import_model(build(s));
  int matmuls = 0;
  for (const Node& n : g.nodes) matmuls += n.op == OpKind::MatMul;
  EXPECT_EQ(matmuls, 1 + 6);
  // A step stays within the 40 nodes per step that the max_nodes check before unrolling counts on.
  for (const char* op : {"GRU", "LSTM"}) {
    Spec worst;
    worst.op = op, worst.lbr = 1, worst.h0 = worst.c0 = worst.peep = true, worst.lens = {1, 2, 3}, worst.clip = 1.0f;
    worst.acts = worst.op == "GRU" ? std::vector<std::string>{"Softsign", "Softsign"}
                                   : std::vector<std::string>{"Softsign", "Softsign", "Softsign"};
    worst.seq = 2;
    const size_t two = import_model(build(worst)).nodes.size();
    worst.seq = 3;
    const size_t three = import_model(build(worst)).nodes.size();
    EXPECT_GT(three - two, 20u) << op;
    EXPECT_LE(three - two, 40u) << op;
  }
  // Constant sequence_lens of full length mask nothing.
  auto m = build(s);
  auto* x = m.mutable_graph()->mutable_node(0);
  ASSERT_EQ(x->input_size(), 4);  // X, W, R, B
  x->add_input("lens");
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("lens"), t->set_data_type(TP::INT32), t->add_dims(3);
  for (int i = 0; i < 3; ++i) t->add_int32_data(6);
  Graph full = import_model(m);
  for (const Node& n : full.nodes) EXPECT_NE(n.op, OpKind::Where);
  t->set_int32_data(1, 7);
  expect_user_error(m, "sequence_lens[1] is 7, outside 0 to the sequence length 6");
}

TEST(RecurrentImport, Refusals) {
  Spec s;
  s.acts = {"Sigmoid", "Foo", "Tanh"};
  expect_user_error(build(s), "unknown activation 'Foo'");
  s.acts = {"Sigmoid", "LeakyRelu", "Tanh"};
  try {
    import_model(build(s));
    ADD_FAILURE() << "LeakyRelu imported";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("activation 'LeakyRelu' is not supported"), std::string::npos) << e.what();
  }
  s.acts = {"Sigmoid", "Tanh"};
  expect_user_error(build(s), "2 activations given, expected 3");
  s.acts = {};

  auto symbolic = build(s);  // X [seq, batch, input] with a symbolic seq
  auto x_dims = [](::onnx::ModelProto& m) {
    return m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  };
  x_dims(symbolic)->mutable_dim(0)->set_dim_param("seq");
  expect_user_error(symbolic, "needs a static sequence length, but X's dim 0 is 'seq'");
  Spec batchwise = s;
  batchwise.layout = 1;
  auto symbolic1 = build(batchwise);
  x_dims(symbolic1)->mutable_dim(1)->set_dim_param("seq");
  expect_user_error(symbolic1, "X's dim 1 is 'seq'");

  auto computed = build(s);  // X made by another node: no shape at import
  computed.mutable_graph()->mutable_input(0)->set_name("X0");
  auto* neg = computed.mutable_graph()->add_node();
  neg->set_op_type("Neg"), neg->add_input("X0"), neg->add_output("X");
  expect_user_error(computed, "X's shape is not known at import");

  Spec longer = s;
  longer.seq = 100;
  Options few;
  few.max_nodes = 2000;
  expect_user_error(build(longer), "unrolling 100 steps in 1 direction(s) would take the graph over its limit of 2000",
                    ".", few);
  longer.seq = 40;
  EXPECT_NO_THROW(import_model(build(longer), ".", few));

  auto reshape = [&](int input, std::vector<int64_t> dims) {
    auto m = build(s);
    auto* shape = m.mutable_graph()->mutable_input(input)->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    return m;
  };
  expect_user_error(reshape(1, {1, 11, 2}), "input 1 (W) has shape [1,11,2], expected [1,12,2]");
  expect_user_error(reshape(1, {2, 12, 2}), "input 1 (W) has shape [2,12,2], expected [1,12,2]");
  expect_user_error(reshape(1, {1, 12, 3}), "input 1 (W) has shape [1,12,3], expected [1,12,2]");
  expect_user_error(reshape(2, {1, 12, 4}), "input 2 (R) has shape [1,12,4], expected [1,12,3]");
  expect_user_error(reshape(3, {1, 12}), "input 3 (B) has shape [1,12], expected [1,24]");
  expect_user_error(reshape(0, {4, 3}), "X has shape [4,3], expected rank 3");

  Spec with_lens = s;
  with_lens.lens = {4, 4, 4};
  auto float_lens = build(with_lens);
  float_lens.mutable_graph()->mutable_input(4)->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  expect_user_error(float_lens, "sequence_lens is f32 (expected int32)");
  auto unknown = build(s);
  attr_int(unknown.mutable_graph()->mutable_node(0), "linear_before_reset", 1);  // a GRU attribute
  expect_user_error(unknown, "unknown attribute 'linear_before_reset'");

  auto direction = build(s);
  auto* a = direction.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("direction"), a->set_type(::onnx::AttributeProto::STRING), a->set_s("sideways");
  expect_user_error(direction, "direction 'sideways'");
  auto alpha = build(s);
  attr_floats(alpha.mutable_graph()->mutable_node(0), "activation_alpha", {0.5f});
  expect_user_error(alpha, "attribute 'activation_alpha' is not supported");
}

}  // namespace
}  // namespace kiln::testing
