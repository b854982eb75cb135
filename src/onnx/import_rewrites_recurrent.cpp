// RNN, GRU and LSTM (versions 7, 14 and 22) unrolled into kiln ops over a sequence length that is
// static at import (kiln has no loop op, and --dim binds sizes only after import): one MatMul of X with
// the input weights for all steps at once, then per step the state's product with R, the gates and the
// state update. sequence_lens masks the steps: a batch past its length keeps its state and outputs
// zeros, as the onnx reference evaluator does; the reverse direction runs from the last step down, so it
// starts at each batch's own last valid step. Layout 1 (batch first) is transposed in and out.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <string_view>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

enum class Cell { rnn, gru, lstm };

struct CellInfo {
  int64_t gates;        // rows of W per hidden unit
  size_t activations;   // per direction
  std::vector<std::string> default_activations;
  size_t max_inputs, max_outputs;
};

const CellInfo& info(Cell c) {
  static const CellInfo rnn{1, 1, {"Tanh"}, 6, 2}, gru{3, 2, {"Sigmoid", "Tanh"}, 6, 2},
      lstm{4, 3, {"Sigmoid", "Tanh", "Tanh"}, 8, 3};
  return c == Cell::rnn ? rnn : c == Cell::gru ? gru : lstm;
}

// Nodes one unrolled step may add per direction (an upper bound), for the max_nodes check before building.
constexpr int64_t kNodesPerStep = 40;

struct Unroll {
  Unroll(OnnxGraphReader& b_, const NodeForm& n_, Cell c) : b(b_), n(n_), cell(c), like(n_.inputs[0]) {}
  OnnxGraphReader& b;
  const NodeForm& n;
  Cell cell;
  ValueId like;  // X: the element type of every float constant
  int64_t seq = 0, hidden = 0, dirs = 1, gates = 1;
  std::vector<std::string> acts;  // lower case, acts per direction times dirs
  std::optional<double> clip;
  bool lbr = false, input_forget = false;

  ValueId op(OpKind k, std::vector<ValueId> in, AttrMap attrs = {}, const std::string& out = {}) {
    return add(b, n, k, std::move(in), "t", std::move(attrs), out);
  }
  ValueId i64s(const std::vector<int64_t>& v) { return b.constant_i64(n.name + "_i", v); }
  ValueId index(int64_t v) {
    return b.graph().add_constant(b.unique_name(n.name + "_i"), Tensor::scalar(DType::i64, v));
  }
  std::map<double, ValueId> scalars;  // one constant (or CastLike) per value, not one per step
  ValueId f(double v) {
    auto [it, fresh] = scalars.try_emplace(v, kNoValue);
    if (fresh) it->second = b.scalar_like(n.name + "_c", v, like);
    return it->second;
  }
  static AttrMap axis(int64_t a) { return one_attr("axis", Attribute{a}); }
  ValueId take(ValueId x, int64_t i) { return op(OpKind::Gather, {x, index(i)}, axis(0)); }  // x[i]
  ValueId transpose(ValueId x, std::vector<int64_t> perm) {
    return op(OpKind::Transpose, {x}, one_attr("perm", Attribute{std::move(perm)}));
  }
  ValueId unsqueeze(ValueId x, int64_t a) { return op(OpKind::Unsqueeze, {x, i64s({a})}); }
  // Split along `ax` into `sizes` (equal parts where it has one entry: the count).
  std::vector<ValueId> split(ValueId x, int64_t ax, std::vector<int64_t> sizes) {
    std::vector<std::string> outs;
    AttrMap attrs = axis(ax);
    std::vector<ValueId> in{x};
    size_t parts = sizes.size();
    if (parts == 1) parts = size_t(sizes[0]), attrs["num_outputs"] = Attribute{sizes[0]};
    else in.push_back(i64s(sizes));
    for (size_t i = 0; i < parts; ++i) outs.push_back(b.unique_name(n.name + "_part"));
    NodeId id = b.add_node(OpKind::Split, std::move(in), outs, b.unique_name(n.name + "_split_node"), std::move(attrs));
    return b.graph().nodes[size_t(id)].outputs;
  }

  ValueId activate(size_t which, int dir, ValueId x) {
    if (clip) x = op(OpKind::Clip, {x, f(-*clip), f(*clip)});  // bounds the input of every activation
    const std::string& a = acts[size_t(dir) * info(cell).activations + which];
    if (a == "sigmoid") return op(OpKind::Sigmoid, {x});
    if (a == "tanh") return op(OpKind::Tanh, {x});
    if (a == "relu") return op(OpKind::Relu, {x});
    if (a == "softplus") return op(OpKind::Softplus, {x});
    return op(OpKind::Div, {x, op(OpKind::Add, {f(1.0), op(OpKind::Abs, {x})})});  // softsign
  }
};

std::optional<Shape> known_shape(OnnxGraphReader& b, ValueId v) {
  if (!b.known_rank(v)) return std::nullopt;
  return b.graph().value(v).type.shape;
}

// A user error unless input `i` (when given and its shape known) has `dims` (-1: any size).
void check_shape(OnnxGraphReader& b, const NodeForm& n, size_t i, const char* what, std::vector<int64_t> dims) {
  if (!n.has_input(i)) return;
  std::optional<Shape> s = known_shape(b, n.inputs[i]);
  if (!s) return;
  auto want = [&] {
    std::string t;
    for (int64_t d : dims) t += (t.empty() ? "" : ",") + (d < 0 ? std::string("?") : std::to_string(d));
    return "[" + t + "]";
  };
  bool ok = s->size() == dims.size();
  for (size_t k = 0; ok && k < dims.size(); ++k) ok = dims[k] < 0 || !(*s)[k].is_static() || (*s)[k].value == dims[k];
  if (!ok) user_error("{}: input {} ({}) has shape {}, expected {}", n.desc(), i, what, shape_string(*s), want());
}

std::vector<std::string> read_activations(const NodeForm& n, Cell cell, int64_t dirs) {
  const CellInfo& ci = info(cell);
  std::vector<std::string> given = ci.default_activations;
  if (auto it = n.attrs.find("activations"); it != n.attrs.end()) {
    const auto* list = std::get_if<std::vector<std::string>>(&it->second.value);
    if (!list) user_error("{}: attribute 'activations' must be a list of strings", n.desc());
    given = *list;
  }
  // One set per direction, or a single set that both directions take (as ONNX Runtime reads it).
  if (given.size() == ci.activations && dirs == 2) {
    std::vector<std::string> once = given;
    given.insert(given.end(), once.begin(), once.end());
  }
  if (given.size() != ci.activations * size_t(dirs))
    user_error("{}: {} activations given, expected {} ({} per direction)", n.desc(), given.size(),
               ci.activations * size_t(dirs), ci.activations);
  static constexpr std::string_view kSupported[] = {"relu", "tanh", "sigmoid", "softsign", "softplus"};
  static constexpr std::string_view kParametrised[] = {"affine",      "leakyrelu", "thresholdedrelu",
                                                       "scaledtanh", "hardsigmoid", "elu"};
  std::vector<std::string> out;
  for (const std::string& a : given) {
    std::string low = a;
    std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (std::find(std::begin(kParametrised), std::end(kParametrised), low) != std::end(kParametrised))
      unsupported("{}: activation '{}' is not supported (kiln reads Relu, Tanh, Sigmoid, Softsign, Softplus)",
                  n.desc(), a);
    if (std::find(std::begin(kSupported), std::end(kSupported), low) == std::end(kSupported))
      user_error("{}: unknown activation '{}' (ONNX's are Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                 "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                 n.desc(), a);
    out.push_back(low);
  }
  return out;
}

void recurrent(OnnxGraphReader& b, NodeForm& n, Cell cell) {
  const CellInfo& ci = info(cell);
  if (!n.has_input(0)) user_error("{}: input 0 (X) is missing", n.desc());
  if (std::none_of(n.outputs.begin(), n.outputs.end(), [](const std::string& o) { return !o.empty(); }))
    user_error("{}: has no outputs", n.desc());
  if (!n.has_input(1) || !n.has_input(2)) user_error("{}: inputs W and R are required", n.desc());
  if (n.inputs.size() > ci.max_inputs) user_error("{}: takes at most {} inputs", n.desc(), ci.max_inputs);
  if (n.outputs.size() > ci.max_outputs) user_error("{}: has at most {} outputs", n.desc(), ci.max_outputs);
  for (const auto& [name, a] : n.attrs) {
    static constexpr std::string_view kCommon[] = {"activation_alpha", "activation_beta", "activations", "clip",
                                                   "direction",        "hidden_size",     "layout"};
    bool known = std::find(std::begin(kCommon), std::end(kCommon), name) != std::end(kCommon) ||
                 (cell == Cell::gru && name == "linear_before_reset") || (cell == Cell::lstm && name == "input_forget");
    if (!known) user_error("{}: unknown attribute '{}'", n.desc(), name);
  }
  // None of the activations read takes a parameter; a list of them means one that does.
  for (const char* a : {"activation_alpha", "activation_beta"})
    if (n.attrs.count(a)) unsupported("{}: attribute '{}' is not supported (activations with parameters)", n.desc(), a);

  Unroll u(b, n, cell);
  u.gates = ci.gates;
  const std::string direction = n.string_attr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    user_error("{}: direction '{}' (expected forward, reverse or bidirectional)", n.desc(), direction);
  u.dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = n.int_attr("layout", 0);
  if (layout != 0 && layout != 1) user_error("{}: layout {} (expected 0 or 1)", n.desc(), layout);
  u.acts = read_activations(n, cell, u.dirs);
  if (n.attrs.count("clip")) {
    u.clip = n.float_attr("clip", 0.0);
    if (!(*u.clip >= 0)) user_error("{}: clip {} (expected a threshold of at least 0)", n.desc(), *u.clip);
  }
  u.lbr = n.int_attr("linear_before_reset", 0) != 0;
  u.input_forget = n.int_attr("input_forget", 0) != 0;

  std::optional<DType> xt = b.known_dtype(n.inputs[0]);
  if (xt && !is_f32_or_half(*xt) && *xt != DType::f64)
    user_error("{}: X is {} (expected a float type)", n.desc(), dtype_name(*xt));
  // The sequence length sizes the unrolled graph, so it must be a number now.
  std::optional<Shape> xs = known_shape(b, n.inputs[0]);
  const char* seq_name = layout == 0 ? "dim 0" : "dim 1";
  if (!xs)
    user_error("{}: needs a static sequence length, but X's shape is not known at import (it is computed by "
               "another node; kiln unrolls the recurrence over X's {}, which must be a fixed size in the declared "
               "type of a graph input or an initializer)",
               n.desc(), seq_name);
  if (xs->size() != 3) user_error("{}: X has shape {}, expected rank 3", n.desc(), shape_string(*xs));
  const Dim& sd = (*xs)[size_t(layout)];
  if (!sd.is_static())
    user_error("{}: needs a static sequence length, but X's {} is '{}' (kiln unrolls the recurrence at import, "
               "before --dim binds sizes: declare the size in the model)",
               n.desc(), seq_name, sd.symbol);
  u.seq = sd.value;
  if (u.seq < 1) user_error("{}: X's sequence length is {} (expected at least 1)", n.desc(), u.seq);
  // The unrolled graph grows with the sequence: bounded by max_nodes, as a model's own nodes are.
  const int64_t budget = b.options().max_nodes - int64_t(b.graph().nodes.size());
  if (u.seq > budget / (u.dirs * kNodesPerStep))
    user_error("{}: unrolling {} steps in {} direction(s) would take the graph over its limit of {} nodes "
               "(max_nodes; a step takes up to {})",
               n.desc(), u.seq, u.dirs, b.options().max_nodes, kNodesPerStep);

  // The hidden size: the attribute, else R's last dim.
  std::optional<Shape> rs = known_shape(b, n.inputs[2]);
  if (n.attrs.count("hidden_size")) {
    u.hidden = n.int_attr("hidden_size", 0);
    if (u.hidden < 1 || u.hidden > (int64_t{1} << 32))
      user_error("{}: hidden_size {} (expected 1 to 2^32)", n.desc(), u.hidden);
  } else if (rs && rs->size() == 3 && rs->back().is_static() && rs->back().value >= 1) {
    u.hidden = rs->back().value;
  } else {
    user_error("{}: no hidden_size attribute and R's shape is not known", n.desc());
  }
  const int64_t H = u.hidden, G = u.gates, D = u.dirs;
  const int64_t I = (*xs)[2].is_static() ? (*xs)[2].value : -1;
  const int64_t B = (*xs)[size_t(1 - layout)].is_static() ? (*xs)[size_t(1 - layout)].value : -1;
  check_shape(b, n, 1, "W", {D, G * H, I});
  check_shape(b, n, 2, "R", {D, G * H, H});
  check_shape(b, n, 3, "B", {D, 2 * G * H});
  check_shape(b, n, 4, "sequence_lens", {B});
  check_shape(b, n, 5, "initial_h", layout == 0 ? std::vector<int64_t>{D, B, H} : std::vector<int64_t>{B, D, H});
  check_shape(b, n, 6, "initial_c", layout == 0 ? std::vector<int64_t>{D, B, H} : std::vector<int64_t>{B, D, H});
  check_shape(b, n, 7, "P", {D, 3 * H});
  for (size_t i : {size_t(1), size_t(2), size_t(3), size_t(5), size_t(6), size_t(7)})
    if (n.has_input(i) && b.known_dtype(n.inputs[i]) && xt && *b.known_dtype(n.inputs[i]) != *xt)
      user_error("{}: input {} is {} but X is {}", n.desc(), i, dtype_name(*b.known_dtype(n.inputs[i])),
                 dtype_name(*xt));

  // X as [seq, batch, input]; states as [dirs, batch, hidden].
  ValueId x = layout == 0 ? n.inputs[0] : u.transpose(n.inputs[0], {1, 0, 2});
  auto state_in = [&](size_t i) {
    if (!n.has_input(i)) return kNoValue;
    return layout == 0 ? n.inputs[i] : u.transpose(n.inputs[i], {1, 0, 2});
  };
  const ValueId h0 = state_in(5), c0 = state_in(6);
  ValueId zeros = kNoValue;  // [batch, hidden], the state where none is given
  if (h0 == kNoValue || (cell == Cell::lstm && c0 == kNoValue)) {
    ValueId batch = u.op(OpKind::Gather, {u.op(OpKind::Shape, {x}), u.i64s({1})}, Unroll::axis(0));
    zeros = u.op(OpKind::Expand, {u.f(0.0), u.op(OpKind::Concat, {batch, u.i64s({H})}, Unroll::axis(0))});
  }

  // sequence_lens: step t of batch i runs where t < sequence_lens[i]; a constant of full lengths masks nothing.
  ValueId mask = kNoValue;  // [seq, batch, 1] bool
  if (n.has_input(4)) {
    std::optional<DType> lt = b.known_dtype(n.inputs[4]);
    if (lt && *lt != DType::i32 && *lt != DType::i64)
      user_error("{}: sequence_lens is {} (expected int32)", n.desc(), dtype_name(*lt));
    const Value& lens = b.graph().value(n.inputs[4]);
    bool full = false;
    if (lens.constant) {
      full = true;
      for (int64_t i = 0; i < lens.constant->numel(); ++i) {
        int64_t l = lens.constant->as_int64(i);
        if (l < 0 || l > u.seq)
          user_error("{}: sequence_lens[{}] is {}, outside 0 to the sequence length {}", n.desc(), i, l, u.seq);
        full = full && l == u.seq;
      }
    }
    if (!full) {
      std::vector<int64_t> steps(size_t(u.seq));
      for (int64_t t = 0; t < u.seq; ++t) steps[size_t(t)] = t;
      ValueId t_col = b.graph().add_constant(b.unique_name(n.name + "_steps"),
                                             Tensor::from_vector<int64_t>(DType::i64, {u.seq, 1}, steps));
      ValueId l_row = u.unsqueeze(cast_to(b, n, n.inputs[4], DType::i64), 0);
      mask = u.unsqueeze(u.op(OpKind::Less, {t_col, l_row}), 2);
    }
  }
  std::vector<ValueId> step_mask(size_t(u.seq), kNoValue);
  auto mask_at = [&](int64_t t) {
    if (step_mask[size_t(t)] == kNoValue) step_mask[size_t(t)] = u.take(mask, t);
    return step_mask[size_t(t)];
  };

  std::vector<ValueId> ys, hs, cs;  // per direction: [seq, batch, H], [batch, H], [batch, H]
  for (int d = 0; d < D; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    auto per_dir = [&](ValueId v) { return D == 1 ? u.op(OpKind::Squeeze, {v, u.i64s({0})}) : u.take(v, d); };
    ValueId w = per_dir(n.inputs[1]), r = per_dir(n.inputs[2]);
    // All steps' input products at once: [seq, batch, G*H], with the biases that sit outside the gates.
    ValueId xw = u.op(OpKind::MatMul, {x, u.transpose(w, {1, 0})});
    ValueId rb_h = kNoValue;  // GRU with linear_before_reset: Rbh goes inside r * (.)
    if (n.has_input(3)) {
      std::vector<ValueId> wr = u.split(per_dir(n.inputs[3]), 0, {2});
      ValueId bias;
      if (cell == Cell::gru && u.lbr) {
        std::vector<ValueId> wb = u.split(wr[0], 0, {3}), rb = u.split(wr[1], 0, {3});
        bias = u.op(OpKind::Concat, {u.op(OpKind::Add, {wb[0], rb[0]}), u.op(OpKind::Add, {wb[1], rb[1]}), wb[2]},
                    Unroll::axis(0));
        rb_h = rb[2];
      } else {
        bias = u.op(OpKind::Add, {wr[0], wr[1]});
      }
      xw = u.op(OpKind::Add, {xw, bias});
    }
    // R^T; for GRU without linear_before_reset the z, r rows apart from the h rows (h's product is of r * H).
    ValueId rt = u.transpose(r, {1, 0}), rt_zr = kNoValue, rt_h = kNoValue;
    if (cell == Cell::gru && !u.lbr) {
      std::vector<ValueId> parts = u.split(r, 0, {2 * H, H});
      rt_zr = u.transpose(parts[0], {1, 0}), rt_h = u.transpose(parts[1], {1, 0});
    }
    std::vector<ValueId> peep;  // i, o, f: [H] each
    if (cell == Cell::lstm && n.has_input(7)) peep = u.split(per_dir(n.inputs[7]), 0, {3});

    ValueId h = h0 != kNoValue ? u.take(h0, d) : zeros;
    ValueId c = cell != Cell::lstm ? kNoValue : c0 != kNoValue ? u.take(c0, d) : zeros;
    std::vector<ValueId> y(size_t(u.seq));
    for (int64_t k = 0; k < u.seq; ++k) {
      const int64_t t = reverse ? u.seq - 1 - k : k;
      ValueId x_t = u.take(xw, t);  // [batch, G*H]
      ValueId h_new, c_new = kNoValue;
      if (cell == Cell::rnn) {
        h_new = u.activate(0, d, u.op(OpKind::Add, {x_t, u.op(OpKind::MatMul, {h, rt})}));
      } else if (cell == Cell::gru) {
        std::vector<ValueId> xg = u.split(x_t, 1, {3});
        ValueId hz = kNoValue, hr = kNoValue, hh = kNoValue;
        if (u.lbr) {
          std::vector<ValueId> hg = u.split(u.op(OpKind::MatMul, {h, rt}), 1, {3});
          hz = hg[0], hr = hg[1], hh = rb_h != kNoValue ? u.op(OpKind::Add, {hg[2], rb_h}) : hg[2];
        } else {
          std::vector<ValueId> hg = u.split(u.op(OpKind::MatMul, {h, rt_zr}), 1, {2});
          hz = hg[0], hr = hg[1];
        }
        ValueId z = u.activate(0, d, u.op(OpKind::Add, {xg[0], hz}));
        ValueId rr = u.activate(0, d, u.op(OpKind::Add, {xg[1], hr}));
        ValueId inner = u.lbr ? u.op(OpKind::Mul, {rr, hh}) : u.op(OpKind::MatMul, {u.op(OpKind::Mul, {rr, h}), rt_h});
        ValueId cand = u.activate(1, d, u.op(OpKind::Add, {xg[2], inner}));
        // (1 - z) * h~ + z * H, the form of the definition.
        h_new = u.op(OpKind::Add, {u.op(OpKind::Mul, {u.op(OpKind::Sub, {u.f(1.0), z}), cand}),
                                   u.op(OpKind::Mul, {z, h})});
      } else {
        std::vector<ValueId> g = u.split(u.op(OpKind::Add, {x_t, u.op(OpKind::MatMul, {h, rt})}), 1, {4});  // i o f c
        auto peephole = [&](ValueId gate, size_t p, ValueId state) {
          return peep.empty() ? gate : u.op(OpKind::Add, {gate, u.op(OpKind::Mul, {peep[p], state})});
        };
        ValueId i = u.activate(0, d, peephole(g[0], 0, c));
        // input_forget couples the gates as ONNX Runtime does: f = 1 - i.
        ValueId fg = u.input_forget ? u.op(OpKind::Sub, {u.f(1.0), i}) : u.activate(0, d, peephole(g[2], 2, c));
        ValueId cand = u.activate(1, d, g[3]);
        c_new = u.op(OpKind::Add, {u.op(OpKind::Mul, {fg, c}), u.op(OpKind::Mul, {i, cand})});
        ValueId o = u.activate(0, d, peephole(g[1], 1, c_new));
        h_new = u.op(OpKind::Mul, {o, u.activate(2, d, c_new)});
      }
      y[size_t(t)] = h_new;
      if (mask != kNoValue) {  // past a batch's length the state stays
        h_new = u.op(OpKind::Where, {mask_at(t), h_new, h});
        if (c_new != kNoValue) c_new = u.op(OpKind::Where, {mask_at(t), c_new, c});
      }
      h = h_new, c = c_new;
    }
    if (n.has_output(0)) {
      ValueId all = u.op(OpKind::Reshape, {u.op(OpKind::Concat, y, Unroll::axis(0)), u.i64s({u.seq, -1, H})});
      if (mask != kNoValue) all = u.op(OpKind::Where, {mask, all, u.f(0.0)});
      ys.push_back(all);
    }
    hs.push_back(h), cs.push_back(c);
  }

  // Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]); Y_h, Y_c [dirs, batch, H] (layout 1: [batch, dirs, H]).
  auto emit = [&](std::vector<ValueId> parts, int64_t at, std::vector<int64_t> perm, const std::string& out) {
    const std::string last = layout == 0 ? out : std::string();
    ValueId v = parts.size() == 1 ? u.op(OpKind::Unsqueeze, {parts[0], u.i64s({at})}, {}, last) : kNoValue;
    if (parts.size() > 1) {
      for (ValueId& p : parts) p = u.unsqueeze(p, at);
      v = u.op(OpKind::Concat, parts, Unroll::axis(at), last);
    }
    if (layout == 1) u.op(OpKind::Transpose, {v}, one_attr("perm", Attribute{std::move(perm)}), out);
  };
  if (n.has_output(0)) emit(ys, 1, {2, 0, 1, 3}, n.outputs[0]);
  if (n.has_output(1)) emit(hs, 0, {1, 0, 2}, n.outputs[1]);
  if (n.has_output(2)) emit(cs, 0, {1, 0, 2}, n.outputs[2]);
}

void rnn(OnnxGraphReader& b, NodeForm& n) { recurrent(b, n, Cell::rnn); }
void gru(OnnxGraphReader& b, NodeForm& n) { recurrent(b, n, Cell::gru); }
void lstm(OnnxGraphReader& b, NodeForm& n) { recurrent(b, n, Cell::lstm); }

constexpr RewriteRow kRows[] = {{"GRU", gru}, {"LSTM", lstm}, {"RNN", rnn}};

}  // namespace

std::span<const RewriteRow> recurrent_rewrites() { return kRows; }

}  // namespace kiln::rewrites
