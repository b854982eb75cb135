// Each route is compiler::compile of the attention graph with softmax_route forced: fused (one row
// kernel reading the mask by broadcast) against the library fallback (a pointwise kernel writing
// scale * scores + mask, then oneDNN's softmax of that). Every step of the compiled plan is launched
// into preallocated outputs (sweep_steps.h), the intermediate of the library route included.
#include "tools/sweep_attention.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>

#include "compiler/compile.h"
#include "kiln/builder.h"
#include "schedule/softmax_route.h"
#include "support/error.h"
#include "tools/sweep_measure.h"
#include "tools/sweep_steps.h"

namespace kiln::tools {
namespace {

constexpr int64_t kBatch = 8, kHeads = 12;
constexpr double kScale = 0.125;

Graph attention_graph(int64_t s) {
  GraphBuilder b("sweep_attention");
  ValueId scores = b.input("scores", DType::f32, {kBatch, kHeads, s, s});
  ValueId mask = b.input("mask", DType::f32, {1, 1, s, s});
  ValueId scaled = b.op(OpKind::Mul, {scores, b.scalar(DType::f32, kScale)});
  b.output(b.op(OpKind::Softmax, {b.op(OpKind::Add, {scaled, mask})}, {{"axis", int64_t{-1}}}, "sm"), "probs");
  return b.build();
}

// The plan each route's compile must make: one row kernel of all three nodes (fused), or the scale and
// mask as a pointwise kernel, then the library's softmax. Anything else: the settings no longer force
// the route, an internal error.
void check_plan(const compiler::Executable& exe, bool library) {
  using compiler::StepKind;
  std::string plan;
  for (const compiler::Step& step : exe.steps)
    plan += fmt::format("{}{} of {} nodes", plan.empty() ? "" : ", ", compiler::step_kind_name(step.kind),
                        step.nodes.size());
  const auto& st = exe.steps;
  const bool expected = library ? st.size() == 2 && st[0].kind == StepKind::generated && st[0].nodes.size() == 2 &&
                                      st[1].kind == StepKind::library
                                : st.size() == 1 && st[0].kind == StepKind::generated && st[0].nodes.size() == 3;
  KILN_INTERNAL_CHECK(expected, "sweep: the attention graph's {} compile planned {}", library ? "library" : "fused",
                      plan);
}

compiler::Executable compile_route(const Graph& g, const backend::Backend& backend, Options options, bool library) {
  options.softmax_route = library ? "library" : "fused";
  compiler::Executable exe = compiler::compile(g, backend, options, Mode::compiled);
  check_plan(exe, library);
  return exe;
}

}  // namespace

std::vector<AttentionResult> sweep_attention(const std::vector<int64_t>& seqs, double budget_ms, bool fastest,
                                             const backend::Backend& backend, const Options& options) {
  std::vector<AttentionResult> out;
  for (int64_t s : seqs) {
    const Graph g = attention_graph(s);
    const compiler::Executable routes[2] = {compile_route(g, backend, options, false),
                                            compile_route(g, backend, options, true)};
    Tensor scores = Tensor::empty(DType::f32, {kBatch, kHeads, s, s});
    Tensor mask = Tensor::empty(DType::f32, {1, 1, s, s});
    Tensor probs = Tensor::empty(DType::f32, {kBatch, kHeads, s, s});
    fill_random(scores.data<float>(), scores.numel(), 7);
    float* m = mask.data<float>();
    for (int64_t i = 0; i < s; ++i)  // causal: -inf above the diagonal
      for (int64_t j = 0; j < s; ++j) m[i * s + j] = j > i ? -INFINITY : 0.0f;
    const std::map<std::string, Tensor> bound{{"scores", scores}, {"mask", mask}, {"probs", probs}};
    PreallocatedSteps runs[2] = {{routes[0], steps_reaching(routes[0], "probs"), bound, options.max_tensor_bytes},
                                 {routes[1], steps_reaching(routes[1], "probs"), bound, options.max_tensor_bytes}};
    auto input = [&](int64_t row, int64_t j) {  // the softmax's input, in fp64
      return double(scores.data<float>()[row * s + j]) * kScale + double(m[(row % s) * s + j]);
    };
    for (int k = 0; k < 2; ++k) {
      std::fill(probs.data<float>(), probs.data<float>() + probs.numel(), NAN);  // a route must write every row
      runs[k].launch();
      check_softmax_rows(probs, kBatch * kHeads * s, s, input,
                         fmt::format("the attention {} route at S={}", k == 0 ? "fused" : "library", s));
    }
    std::vector<double> ms = interleaved_times({[&] { runs[0].launch(); }, [&] { runs[1].launch(); }}, budget_ms, 5,
                                               fastest);
    AttentionResult r;
    r.seq = s;
    r.ms[0] = ms[0];
    r.ms[1] = ms[1];
    r.library_chosen = schedule::routing_policy(options).masked_library_fallback;
    out.push_back(r);
  }
  return out;
}

}  // namespace kiln::tools
