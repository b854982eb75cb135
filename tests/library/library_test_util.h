// Helpers for the library-call tests: graphs through shape inference, running a group's nodes one by
// one (eager f32, or the fp64 reference on f64 copies), running the fused kernel, and comparing.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "passes/passes.h"
#include "runtime/node_runner.h"
#include "schedule/fuse_library.h"
#include "backend/cpu/library_kernel.h"

namespace kiln::library_test {

using schedule::LibraryGroup;

inline Graph inferred(GraphBuilder& b) {
  Graph g = b.build();
  infer_shapes(g, Options{});
  return g;
}

inline std::vector<LibraryGroup> groups_of(const Graph& g, std::vector<char> claimed = {}) {
  if (claimed.empty()) claimed.assign(g.nodes.size(), 0);
  return schedule::find_library_groups(g, claimed);
}

inline std::vector<std::string> op_names(const Graph& g, const LibraryGroup& grp) {
  std::vector<std::string> r;
  for (NodeId n : grp.nodes) r.emplace_back(op_name(g.nodes[size_t(n)].op));
  return r;
}

// Uniform values in [lo, hi]; a fraction `specials` of them becomes NaN, +Inf or -Inf.
inline Tensor random_f32(std::vector<int64_t> shape, std::mt19937& rng, double specials = 0.0, float lo = -1.f,
                         float hi = 1.f) {
  Tensor t = Tensor::empty(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> u(lo, hi);
  std::uniform_real_distribution<double> p(0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    double q = p(rng);
    if (q < specials / 3) v = NAN;
    else if (q < 2 * specials / 3) v = INFINITY;
    else if (q < specials) v = -INFINITY;
    t.data<float>()[i] = v;
  }
  return t;
}

// Runs the group's nodes in order with run_node. `given` holds the non-constant inputs (f32); with
// `reference`, every float tensor (inputs and constants) is converted to f64 and the fp64 path runs.
inline Tensor run_nodes(const Graph& g, const LibraryGroup& grp, const std::map<ValueId, Tensor>& given,
                        bool reference) {
  std::map<ValueId, Tensor> vals;
  for (const auto& [v, t] : given) vals[v] = reference ? convert_tensor(t, DType::f64) : t;
  NodeRunOptions o;
  o.kernel.reference = reference;
  for (NodeId id : grp.nodes) {
    const Node& n = g.nodes[size_t(id)];
    std::vector<const Tensor*> ins;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        ins.push_back(nullptr);
        continue;
      }
      if (!vals.count(v)) {
        const auto& c = g.value(v).constant;
        if (!c) ADD_FAILURE() << "value '" << g.value(v).name << "' is neither given nor constant";
        vals[v] = reference && is_float(c->dtype()) ? convert_tensor(*c, DType::f64) : *c;
      }
      ins.push_back(&vals[v]);
    }
    std::vector<Tensor> outs = run_node(n, ins, o);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != kNoValue) vals[n.outputs[k]] = outs[k];
  }
  return vals.at(grp.output);
}

// The group's input tensors in run() order: constants from the graph, the rest from `given`.
inline std::vector<const Tensor*> kernel_inputs(const Graph& g, const LibraryGroup& grp,
                                                const std::map<ValueId, Tensor>& given) {
  std::vector<const Tensor*> r;
  for (ValueId v : grp.inputs) r.push_back(g.value(v).constant ? g.value(v).constant.get() : &given.at(v));
  return r;
}

inline Tensor run_fused(const Graph& g, const LibraryGroup& grp, const std::map<ValueId, Tensor>& given,
                        const Options& options = Options{}) {
  auto k = backend::cpu::build_library_kernel(g, grp, options);
  return k->run(kernel_inputs(g, grp, given), int64_t{1} << 32);
}

// NaN where want is NaN (and only there), equal infinities, else |got - want| <= atol + rtol * |want|.
// Returns the number of mismatches (the first few are reported).
inline int expect_close(const Tensor& got, const Tensor& want, double atol, double rtol, const std::string& what) {
  EXPECT_EQ(got.shape(), want.shape()) << what;
  if (got.shape() != want.shape()) return 1;
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.as_double(i), w = want.as_double(i);
    bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok && ++bad <= 5) ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
  }
  return bad;
}

// The fused call against the fp64 reference of the same nodes, and against the eager f32 nodes.
inline void check_group(const Graph& g, const LibraryGroup& grp, const std::map<ValueId, Tensor>& given, double atol,
                        double rtol, const std::string& what, const Options& options = Options{}) {
  Tensor got = run_fused(g, grp, given, options);
  Tensor want = run_nodes(g, grp, given, /*reference=*/true);
  Tensor eager = run_nodes(g, grp, given, /*reference=*/false);
  EXPECT_EQ(got.dtype(), DType::f32) << what;
  expect_close(got, want, atol, rtol, what + " vs fp64 reference");
  expect_close(got, eager, atol, rtol, what + " vs eager");
}

inline int count_nan(const Tensor& t) {
  int n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += std::isnan(t.as_double(i));
  return n;
}

}  // namespace kiln::library_test
