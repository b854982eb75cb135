#include "row_cases.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>

#include "kiln/builder.h"
#include "loops/index_expr.h"
#include "loops/row_kernel.h"
#include "ops/elementwise/elementwise.h"
#include "ops/registry.h"
#include "ops/shape/shape_ops.h"
#include "support/error.h"

namespace kiln::backend::cuda::testing {
namespace {

constexpr int64_t kMaxRank = 16;

// The op families a row group holds: elementwise, the reductions (softmax, LayerNorm, Reduce*) and
// Gather / GatherElements; none needs oneDNN or OpenBLAS (see pointwise_reference.h).
const OpRegistry& row_reference_ops() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_reduction_ops(r);
    shape_ops::register_gather_ops(r);
    return r;
  }();
  return registry;
}

const OpDef& definition(const Node& n) {
  const OpDef* def = row_reference_ops().find(n.op);
  KILN_INTERNAL_CHECK(def, "row reference: no kernel for {} (node '{}')", op_name(n.op), n.name);
  return *def;
}

void infer_row_types(Graph& g) {
  int fresh = 0;
  for (Node& n : g.nodes) {
    std::vector<const TensorType*> types;
    std::vector<const Tensor*> values;
    for (ValueId v : n.inputs) {
      types.push_back(v == kNoValue ? nullptr : &g.value(v).type);
      values.push_back(v == kNoValue ? nullptr : g.value(v).constant.get());
    }
    InferContext ctx(n, std::move(types), std::move(values), &fresh, kMaxRank);
    std::vector<TensorType> out = definition(n).infer(ctx);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) g.value(n.outputs[i]).type = out.at(i);
  }
}

Tensor widened(const Tensor& t) {
  return is_float(t.dtype()) && t.dtype() != DType::f64 ? elementwise::convert_elements(t, DType::f64, false) : t;
}

// One node on the reference path (KernelContext::reference: plain loops), from f64 copies of its inputs.
Tensor run_reference_node(const Node& n, const std::vector<const Tensor*>& in) {
  const OpDef& def = definition(n);
  std::vector<TensorType> types(in.size());
  std::vector<const TensorType*> type_of(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    types[i] = TensorType{in[i]->dtype(), shape_of(in[i]->shape())};
    type_of[i] = &types[i];
  }
  int fresh = 0;
  InferContext ctx(n, type_of, in, &fresh, kMaxRank);
  std::vector<TensorType> out_types = def.infer(ctx);
  std::vector<Tensor> out(1);
  if (!def.kernel_makes_outputs) out[0] = Tensor::empty(out_types.at(0).dtype, static_dims(out_types[0].shape));
  KernelContext reference;
  reference.reference = true;
  def.kernel(n, in, out, reference);
  return out[0];
}

Tensor reference_row_group(const Graph& g, const schedule::RowGroup& group, const std::vector<Tensor>& inputs) {
  std::map<ValueId, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[group.inputs[i]] = widened(inputs[i]);
  for (NodeId id : group.nodes) {
    const Node& n = g.nodes[size_t(id)];
    std::vector<const Tensor*> in;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        in.push_back(nullptr);
        continue;
      }
      if (!values.count(v)) {  // constants the kernel inlined (scalars, axes) are no group input
        KILN_INTERNAL_CHECK(g.value(v).constant, "row reference: value '{}' has no tensor", g.value(v).name);
        values[v] = widened(*g.value(v).constant);
      }
      in.push_back(&values.at(v));
    }
    values[n.outputs[0]] = widened(run_reference_node(n, in));
  }
  return values.at(group.output);
}

// The graphs (as tests/rows/row_graphs.h builds them, typed with the reference's own inference).
Graph finish(GraphBuilder& b) {
  Graph g = b.build();
  infer_row_types(g);
  return g;
}

const Dim kN = Dim::sym("n");
const Dim kW = Dim::sym("w");

Graph softmax_graph(Shape shape, bool log, DType dtype) {
  GraphBuilder b("softmax");
  ValueId x = b.input("x", dtype, std::move(shape));
  b.output(b.op(log ? OpKind::LogSoftmax : OpKind::Softmax, {x}, {{"axis", -1}}), "y");
  return finish(b);
}

// bert's attention probabilities: Where(IsNaN(s), 0, s), s = Softmax(scores + Where(mask, 0, -inf)).
Graph masked_softmax_graph(int64_t heads, DType t = DType::f32) {
  GraphBuilder b("attention");
  const Dim seq = Dim::sym("seq");
  ValueId scores = b.input("scores", t, Shape{Dim::fixed(1), Dim::fixed(heads), seq, seq});
  ValueId mask = b.input("mask", DType::boolean, Shape{Dim::fixed(1), Dim::fixed(1), seq, seq});
  ValueId bias = b.op(OpKind::Where, {mask, b.scalar(t, 0.0), b.scalar(t, -INFINITY)});
  ValueId s = b.op(OpKind::Softmax, {b.op(OpKind::Add, {scores, bias})}, {{"axis", -1}});
  b.output(b.op(OpKind::Where, {b.op(OpKind::IsNaN, {s}), b.scalar(t, 0.0), s}), "probs");
  return finish(b);
}

// LayerNormalization(a + b) over the last dim of [rows, hidden] (gamma and beta of the same dtype).
Graph residual_layernorm_graph(int64_t hidden, bool with_bias, DType t = DType::f32) {
  GraphBuilder b("layernorm");
  ValueId x = b.input("a", t, Shape{kN, Dim::fixed(hidden)});
  ValueId y = b.input("b", t, Shape{kN, Dim::fixed(hidden)});
  std::vector<ValueId> in{b.op(OpKind::Add, {x, y}), b.constant("gamma", random_normal(t, {hidden}, 1.0, 0.2, 7))};
  if (with_bias) in.push_back(b.constant("beta", random_normal(t, {hidden}, 0.0, 0.5, 8)));
  b.output(b.op(OpKind::LayerNormalization, in, {{"axis", -1}, {"epsilon", 1e-5}}), "y");
  return finish(b);
}

// LayerNormalization over the last two dims of [n, 4, 5] (stash_type 11: f32 data, f64 statistics).
Graph layernorm_two_axes_graph(int stash_type) {
  GraphBuilder b("layernorm2");
  ValueId x = b.input("x", DType::f32, Shape{kN, Dim::fixed(4), Dim::fixed(5)});
  ValueId scale = b.constant("gamma", random_normal(DType::f32, {4, 5}, 1.0, 0.2, 9));
  b.output(b.op(OpKind::LayerNormalization, {x, scale}, {{"axis", 1}, {"epsilon", 1e-3}, {"stash_type", stash_type}}),
           "y");
  return finish(b);
}

Graph reduce_graph(OpKind op, Shape shape, std::vector<int64_t> axes, int keepdims, DType t = DType::f32) {
  GraphBuilder b("reduce");
  ValueId x = b.input("x", t, std::move(shape));
  std::vector<ValueId> in{x};
  if (!axes.empty()) in.push_back(b.ints(axes));
  b.output(b.op(op, in, {{"keepdims", keepdims}}), "y");
  return finish(b);
}

// NLL's pattern: GatherElements(LogSoftmax(x [n, w]), idx [n, 1] (i64), axis -1).
Graph log_softmax_gather_graph() {
  GraphBuilder b("log_softmax_gather");
  ValueId x = b.input("x", DType::f32, Shape{kN, kW});
  ValueId idx = b.input("idx", DType::i64, Shape{kN, Dim::fixed(1)});
  ValueId y = b.op(OpKind::LogSoftmax, {x}, {{"axis", -1}});
  b.output(b.op(OpKind::GatherElements, {y, idx}, {{"axis", -1}}), "picked");
  return finish(b);
}

std::vector<Sizes> nw(std::initializer_list<std::pair<int64_t, int64_t>> list) {
  std::vector<Sizes> out;
  for (auto [n, w] : list) out.push_back({{"n", n}, {"w", w}});
  return out;
}

// bf16 and f16: softmax (a row of -inf among them), bert's masked softmax (a fully masked row),
// log-softmax, LayerNorm (computed in f32: schedule/row_nodes.cpp), ReduceSum and ReduceMean, at widths
// that do not divide a block (1, 31, 1000 and more).
void add_half_cases(std::vector<RowCase>& cases) {
  using A = RowAccuracy;
  for (DType t : {DType::bf16, DType::f16}) {
    const std::string s = std::string("_") + std::string(dtype_name(t));
    const bool bf = t == DType::bf16;
    cases.push_back({"softmax" + s, [t] { return softmax_graph({kN, kW}, false, t); },
                     nw({{1, 1}, {5, 31}, {3, 1000}, {2, 5000}}), A::softmax, 97, true});
    // f16's at seq 1000 (one head): rows wider than a block of 256 threads.
    cases.push_back({"masked_softmax" + s, [t, bf] { return masked_softmax_graph(bf ? 2 : 1, t); },
                     {{{"seq", 1}}, {{"seq", 31}}, {{"seq", bf ? 257 : 1000}}}, A::softmax, 97, true});
    cases.push_back({"log_softmax" + s, [t] { return softmax_graph({kN, kW}, true, t); },
                     nw({{1, 1}, {5, 31}, {3, 1000}, {1, 4099}}), A::log_softmax, 97, true});
    cases.push_back({"layernorm_residual" + s, [t] { return residual_layernorm_graph(1000, true, t); },
                     {{{"n", 1}}, {{"n", 5}}}, A::layernorm, 3000});
    cases.push_back({"layernorm_residual_31" + s, [t] { return residual_layernorm_graph(31, false, t); },
                     {{{"n", 1}}, {{"n", 40}}}, A::layernorm, 300});
    cases.push_back({"layernorm_width1" + s, [t] { return residual_layernorm_graph(1, true, t); },
                     {{{"n", 1}}, {{"n", 9}}}, A::layernorm, 0});
    cases.push_back({"reduce_sum_rows" + s, [t] { return reduce_graph(OpKind::ReduceSum, {kN, kW}, {-1}, 1, t); },
                     nw({{1, 1}, {5, 31}, {3, 1000}, {2, 5000}, {2, 0}}), A::sum, 997, true});
    cases.push_back({"reduce_mean_rows" + s, [t] { return reduce_graph(OpKind::ReduceMean, {kN, kW}, {-1}, 1, t); },
                     nw({{1, 1}, {5, 31}, {3, 1000}, {2, 5000}, {2, 0}}), A::mean, 997, true});
  }
}

std::vector<RowCase> make_cases() {
  using A = RowAccuracy;
  // Widths 1, 31, 257 (neither a multiple of 32 nor of a block), 1000, 5000, 70000; one row; many rows.
  const std::vector<Sizes> wide = nw({{1, 1}, {1, 31}, {3, 257}, {4, 1000}, {2, 5000}, {1, 70000}, {37, 8}, {3, 0}});
  std::vector<RowCase> cases;
  cases.push_back({"softmax_f32", [] { return softmax_graph({kN, kW}, false, DType::f32); }, wide, A::softmax, 97, true});
  cases.push_back({"softmax_f64", [] { return softmax_graph({kN, kW}, false, DType::f64); },
                   nw({{1, 1}, {9, 31}, {3, 257}, {2, 5000}}), A::softmax, 97, true});
  cases.push_back({"log_softmax_f32", [] { return softmax_graph({kN, kW}, true, DType::f32); },
                   nw({{1, 1}, {5, 31}, {3, 1000}, {1, 70000}}), A::log_softmax, 97, true});
  cases.push_back({"masked_softmax", [] { return masked_softmax_graph(3); },
                   {{{"seq", 1}}, {{"seq", 31}}, {{"seq", 257}}}, A::softmax, 97, true});
  cases.push_back({"layernorm_residual", [] { return residual_layernorm_graph(768, true); },
                   {{{"n", 1}}, {{"n", 7}}}, A::layernorm, 5000});
  cases.push_back({"layernorm_residual_31", [] { return residual_layernorm_graph(31, false); },
                   {{{"n", 1}}, {{"n", 40}}}, A::layernorm, 300});
  cases.push_back({"layernorm_two_axes", [] { return layernorm_two_axes_graph(1); }, {{{"n", 1}}, {{"n", 9}}},
                   A::layernorm, 0});
  cases.push_back({"layernorm_two_axes_f64", [] { return layernorm_two_axes_graph(11); }, {{{"n", 9}}},
                   A::layernorm_f64, 0});
  cases.push_back({"reduce_mean_rows", [] { return reduce_graph(OpKind::ReduceMean, {kN, kW}, {-1}, 1); },
                   nw({{1, 1}, {3, 257}, {2, 5000}, {1, 70000}, {2, 0}}), A::mean, 997, true});
  cases.push_back({"reduce_sum_two_axes",
                   [] { return reduce_graph(OpKind::ReduceSum, {Dim::fixed(6), Dim::fixed(3), Dim::fixed(17)}, {1, 2}, 0); },
                   {{}}, A::sum, 0});
  cases.push_back({"reduce_max_whole", [] { return reduce_graph(OpKind::ReduceMax, {kN, kW}, {}, 0); },
                   nw({{1, 1}, {3, 1000}, {7, 10000}}), A::exact, 0});
  cases.push_back({"reduce_max_rows", [] { return reduce_graph(OpKind::ReduceMax, {kN, kW}, {-1}, 1); },
                   nw({{1, 1}, {5, 31}, {3, 257}, {2, 5000}, {3, 0}}), A::exact, 97, true});
  cases.push_back({"reduce_min_width1",
                   [] { return reduce_graph(OpKind::ReduceMin, {Dim::fixed(7), Dim::fixed(1)}, {-1}, 1); }, {{}},
                   A::exact, 3});
  cases.push_back({"log_softmax_gather", log_softmax_gather_graph, nw({{1, 1}, {40, 8}, {5, 31}, {3, 1000}, {2, 70000}}),
                   A::log_softmax, 97, true, true});
  add_half_cases(cases);
  return cases;
}

// Normal(0, 2) floats with NaN, +inf and -inf sprinkled in; booleans 80% true; i64 indices in [-w, w)
// (w: the last dim of x, read from `cols`).
Tensor random_input(const RowCase& c, DType dtype, std::vector<int64_t> shape, int64_t cols, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(DType::f64, shape);
  std::normal_distribution<double> normal(0.0, 2.0);
  if (dtype == DType::boolean || dtype == DType::i64) {
    Tensor out = Tensor::empty(dtype, shape);
    for (int64_t i = 0; i < out.numel(); ++i) {
      if (dtype == DType::boolean) out.data<bool>()[i] = rng() % 5 != 0;
      else out.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * cols)) - cols;
    }
    return out;
  }
  // By rows of the last dim (a NaN or +inf anywhere makes a softmax row NaN, so most rows stay finite):
  // r % 4 == 2 gets NaN, +inf and -inf sprinkled, r % 4 == 3 only -inf, the others none.
  const int64_t last = shape.empty() ? 1 : std::max<int64_t>(shape.back(), 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = normal(rng);
    const int64_t mode = (i / last) % 4;
    if (c.special_every > 0 && mode >= 2) {
      const uint64_t r = rng() % static_cast<uint64_t>(c.special_every);
      v = r > 2 ? v : mode == 3 ? -INFINITY : r == 0 ? NAN : r == 1 ? INFINITY : -INFINITY;
    }
    t.data<double>()[i] = v;
  }
  return elementwise::convert_elements(t, dtype, false);
}

// The unit roundoff of an accumulator: f16 and bf16 reductions accumulate in f32 (loops/row_kernel.h).
double ulp_of(DType t) { return t == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24); }


void set_element(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::f32: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::f64: t.data<double>()[i] = v; break;
    case DType::f16: t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
    case DType::bf16: t.data<uint16_t>()[i] = float_to_bf16(static_cast<float>(v)); break;
    default: internal_error("row case input of {}", dtype_name(t.dtype()));
  }
}

}  // namespace

const std::vector<RowCase>& row_cases() {
  static const std::vector<RowCase> cases = make_cases();
  return cases;
}

const RowCase& row_case(const std::string& name) {
  auto it = std::find_if(row_cases().begin(), row_cases().end(), [&](const RowCase& c) { return c.name == name; });
  KILN_INTERNAL_CHECK(it != row_cases().end(), "no row case {}", name);
  return *it;
}

BuiltRowCase build_row_case(const RowCase& c) {
  BuiltRowCase built{c.graph(), {}};
  std::vector<schedule::RowGroup> groups = schedule::find_row_groups(built.graph, {});
  KILN_INTERNAL_CHECK(groups.size() == 1, "row case {}: {} row groups, expected one", c.name, groups.size());
  built.group = std::move(groups[0]);
  KILN_INTERNAL_CHECK(built.group.nodes.size() == built.graph.nodes.size(), "row case {}: {} of {} nodes fused",
                      c.name, built.group.nodes.size(), built.graph.nodes.size());
  built.group.kernel.name = c.name;
  return built;
}

namespace {

// u is the unit roundoff of the accumulator's dtype. A sum over a row is a tree of depth
// d = ceil(cols / threads) (each thread's chain) + 5 (the warp butterfly) + threads / 32 (the warps, in
// order), so its error is at most about d u times the sum of |terms| (the CPU's order is another tree:
// only this bound, not its bits, is shared). Math functions add CUDA's documented ulps.
RowTolerance f32_or_f64_tolerance(const RowCase& c, DType accumulator, int64_t cols, int threads) {
  const double u = ulp_of(accumulator);
  const double depth = static_cast<double>((cols + threads - 1) / threads + 5 + threads / 32);
  const double g = depth * u;
  switch (c.accuracy) {
    case RowAccuracy::exact: return {0, 0, "max / min: exact"};
    case RowAccuracy::softmax:
      // Terms of relative error 3u (x - max rounds, then exp's 2 ulp), the sum's g, the division's u/2; a
      // term's error through the rounding of x - max is d e^-d u <= u / e absolute.
      return {g + 8 * u, 4 * u, fmt::format("sum tree depth {:.0f}: rtol (depth + 8) u, atol 4 u", depth)};
    case RowAccuracy::log_softmax:
      // log(sum) within g + logf's 1.5 ulp of log(sum) <= log(cols) + 1; x - max rounds by u |x - max|.
      return {4 * u, 2 * g + 4 * u * (2 + std::log(static_cast<double>(std::max<int64_t>(cols, 1)))),
              fmt::format("sum tree depth {:.0f}: atol 2 depth u + 4 u (2 + ln cols), rtol 4 u", depth)};
    case RowAccuracy::layernorm:
      // Normalised values are O(1): mean and variance within a few g of the sum of |x| / cols (~1.6 and
      // ~8, for the sum of two N(0, 2) values), the rest a few roundings.
      return {4 * g + 16 * u, 4 * g + 16 * u, fmt::format("depth {:.0f}: rtol = atol = (4 depth + 16) u", depth)};
    case RowAccuracy::layernorm_f64:
      return {2 * ulp_of(DType::f32), 2 * ulp_of(DType::f32), "f64 statistics, then f32 roundings: 2 u of f32"};
    case RowAccuracy::sum:
      // The sum of |x| of N(0, 2) values is about 1.6 cols: atol 4 g cols keeps a margin of 2.5.
      return {u, 4 * g * static_cast<double>(cols), fmt::format("depth {:.0f}: atol 4 depth u cols", depth)};
    case RowAccuracy::mean:
      return {2 * u, 4 * g, fmt::format("depth {:.0f}: atol 4 depth u, rtol 2 u (the division)", depth)};
  }
  internal_error("unknown row accuracy");
}

}  // namespace

RowTolerance row_tolerance(const RowCase& c, DType accumulator, DType output, int64_t cols, int threads) {
  RowTolerance tol = f32_or_f64_tolerance(c, accumulator, cols, threads);
  tol.output = output;
  // A half output is the f32 result rounded once, at the store (LayerNorm's Cast to the half type
  // rounds the same value): half an ulp of the output at the larger of the two values on top.
  if (is_half(output) && c.accuracy != RowAccuracy::exact) {
    tol.ulps = 0.5;
    tol.why += fmt::format(", then 0.5 ulp of {} (the store's rounding)", dtype_name(output));
  }
  return tol;
}

std::string RowReport::summary() const {
  if (half_output)
    return fmt::format("{} elements ({} NaN expected), worst error {:.3f} of its bound, largest {:.3f} ulp of the output",
                       elements, nan_expected, worst, max_ulps);
  return fmt::format("{} elements ({} NaN expected), worst error {:.3f} of its bound", elements, nan_expected, worst);
}

const std::vector<RowVariant>& row_variants() {
  using codegen::cuda::CudaRowMapping;
  static const std::vector<RowVariant> variants = {
      {"t256", {.threads_per_block = 256, .mapping = CudaRowMapping::automatic}},
      {"t64_block", {.threads_per_block = 64, .mapping = CudaRowMapping::block}},
      {"t64_warp", {.threads_per_block = 64, .mapping = CudaRowMapping::warp}},
      // the warp rows as they were before loads were stashed (each pass reading memory again)
      {"t256_unstashed", {.threads_per_block = 256, .mapping = CudaRowMapping::automatic, .stash_loads = false}},
  };
  return variants;
}

RowReport run_row_case(const RowCase& c, const BuiltRowCase& built, const codegen::cuda::CudaRowLaunch& launch,
                       const std::vector<Sizes>& sizes, const RowKernelRunner& run) {
  return run_row_case(c, built, RowOrder{launch.threads_per_row(), [&launch](int64_t rows, int64_t cols) {
                                           return launch.blocks(rows, cols);
                                         }, fmt::format("blocks of {}, {} rows a block", launch.threads_per_block,
                                                        launch.rows_per_block)},
                      sizes, run);
}

RowReport run_row_case(const RowCase& c, const BuiltRowCase& built, const RowOrder& order,
                       const std::vector<Sizes>& sizes, const RowKernelRunner& run) {
  RowReport report;
  const loops::RowKernel& k = built.group.kernel;
  for (const Sizes& s : sizes) {
    std::unordered_map<std::string, int64_t> values(s.begin(), s.end());
    loops::Expr rows_e(1), cols_e(1);
    for (const loops::Expr& d : loops::row_sizes(k)) rows_e = rows_e * d;
    for (const loops::Expr& d : loops::col_sizes(k)) cols_e = cols_e * d;
    const int64_t rows = loops::evaluate(rows_e, values), cols = loops::evaluate(cols_e, values);
    uint64_t seed = 14695981039346656037ull;  // FNV-1a of the name: the same inputs on every machine
    for (char ch : c.name) seed = (seed ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    std::mt19937_64 rng(seed + static_cast<uint64_t>(rows * 1000003 + cols));
    std::vector<Tensor> inputs;
    for (ValueId v : built.group.inputs) {
      const Value& value = built.graph.value(v);
      if (value.constant) {
        inputs.push_back(*value.constant);
        continue;
      }
      std::vector<int64_t> shape;
      for (const Dim& d : value.type.shape) shape.push_back(d.is_static() ? d.value : s.at(d.symbol));
      Tensor t = random_input(c, value.type.dtype, shape, cols, rng);
      const int64_t last = shape.empty() ? 1 : shape.back();
      if (c.neg_inf_row && is_float(t.dtype()) && last > 0 && t.numel() / last >= 3)
        for (int64_t i = last; i < 2 * last; ++i) set_element(t, i, -INFINITY);
      if (t.dtype() == DType::boolean && last > 0)  // one fully masked row (the only one when there is one)
        for (int64_t i = 0; i < last; ++i) t.data<bool>()[(t.numel() / last > 1 ? last : 0) + i] = false;
      inputs.push_back(std::move(t));
    }
    Tensor want = reference_row_group(built.graph, built.group, inputs);
    if (c.gather_out_of_range) {  // the reference raises there; the kernel writes NaN
      const int64_t far[] = {cols, -cols - 1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].dtype() == DType::i64)
          for (int64_t r = 3; r < rows; r += 5) {
            inputs[i].data<int64_t>()[r] = far[(r / 5) % 4];
            want.data<double>()[r] = NAN;
          }
    }
    std::vector<int64_t> symbols;
    for (const schedule::SymbolSource& src : built.group.symbols) symbols.push_back(inputs.at(size_t(src.input)).dim(src.dim));
    const DType accumulator = k.reductions.empty() ? k.output.dtype : k.reductions[0].body.dtype();
    const RowTolerance tol = row_tolerance(c, accumulator, k.output.dtype, cols, order.threads_per_row);
    report.half_output = is_half(k.output.dtype);
    std::vector<int64_t> grids = {order.blocks(rows, cols)};
    if (rows > 2) grids.push_back(2);
    for (int64_t blocks : grids) {
      const std::string where = fmt::format("{} ({} rows x {} cols, {} {})", c.name, rows, cols, blocks, order.label);
      const KernelRun got = run(inputs, symbols, rows, cols, k.output.dtype, want.shape(), blocks);
      if (!got.guard_intact) report.failures.push_back(where + ": wrote past the output");
      if (got.output.numel() != want.numel()) {
        report.failures.push_back(where + ": wrong element count");
        continue;
      }
      for (int64_t i = 0; i < want.numel(); ++i) {
        const double g = got.output.as_double(i), w = want.as_double(i);
        ++report.elements;
        report.nan_expected += std::isnan(w);
        bool ok = false;
        // A value beyond the output type's range must be stored as that infinity.
        const double w_stored = std::fabs(w) >= overflow_threshold(k.output.dtype) ? std::copysign(INFINITY, w) : w;
        if (std::isnan(w) || std::isinf(w_stored)) {
          ok = std::isnan(w) ? std::isnan(g) : g == w_stored;
        } else {
          const double ulp = ulp_at(std::max(std::fabs(g), std::fabs(w)), k.output.dtype);
          const double bound = tol.atol + tol.rtol * std::fabs(w) + tol.ulps * ulp, err = std::fabs(g - w);
          ok = err <= bound;  // false for a NaN g
          if (ok && bound > 0) report.worst = std::max(report.worst, err / bound);
          if (ok && report.half_output) report.max_ulps = std::max(report.max_ulps, err / ulp);
        }
        if (!ok) {
          report.failures.push_back(fmt::format("{} at element {}: got {:a} ({}), want {:a} ({}); bound: {}", where, i,
                                                g, g, w, w, tol.why));
          break;
        }
      }
    }
  }
  return report;
}

}  // namespace kiln::backend::cuda::testing
