// Masked attention softmax in the compiled plan: the mask (additive, or boolean through Where) and the
// safe-softmax guard join the softmax in one kernel, and no [B,H,S,S] buffer exists besides the scores
// and the probabilities. Results match the fp64 reference, fully masked rows included.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <unistd.h>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "ops/node_runner.h"
#include "runtime/compare.h"

namespace kiln {
namespace {

constexpr int64_t B = 2, H = 3, S = 7, D = 5;

// scores = (q @ k^T) * scale, masked, softmax (with the exporters' IsNaN/Where guard when `guard`),
// then @ v. `boolean`: Where(mask[B,1,S,S], scores, -inf) as masked_fill exports it; otherwise the
// additive form bert uses: scores + Where(mask[B,1,1,S], 0, -inf).
Graph attention(bool boolean, bool guard) {
  GraphBuilder b("attention");
  ValueId q = b.input("q", DType::f32, {B, H, S, D});
  ValueId k = b.input("k", DType::f32, {B, H, S, D});
  ValueId v = b.input("v", DType::f32, {B, H, S, D});
  ValueId kt = b.op(OpKind::Transpose, {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  ValueId scores = b.op(OpKind::Mul, {b.op(OpKind::MatMul, {q, kt}), b.scalar(DType::f32, 1.0 / std::sqrt(D))});
  const double inf = std::numeric_limits<double>::infinity();
  ValueId masked;
  if (boolean) {
    ValueId mask = b.input("mask", DType::boolean, {B, 1, S, S});
    masked = b.op(OpKind::Where, {mask, scores, b.scalar(DType::f32, -inf)});
  } else {
    ValueId mask = b.input("mask", DType::boolean, {B, 1, 1, S});
    masked = b.op(OpKind::Add, {scores, b.op(OpKind::Where, {mask, b.scalar(DType::f32, 0.0), b.scalar(DType::f32, -inf)})});
  }
  ValueId probs = b.op(OpKind::Softmax, {masked}, {{"axis", int64_t{-1}}});
  if (guard) probs = b.op(OpKind::Where, {b.op(OpKind::IsNaN, {probs}), b.scalar(DType::f32, 0.0), probs});
  b.output(b.op(OpKind::MatMul, {probs, v}), "out");
  return b.build();
}

std::map<std::string, Tensor> inputs(bool boolean) {
  auto fill = [](int64_t n, double phase) {
    std::vector<double> x(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(double(i) * 0.37 + phase) * 2.0;
    return x;
  };
  std::map<std::string, Tensor> in;
  in["q"] = Tensor::from_vector<double>(DType::f32, {B, H, S, D}, fill(B * H * S * D, 0.1));
  in["k"] = Tensor::from_vector<double>(DType::f32, {B, H, S, D}, fill(B * H * S * D, 1.7));
  in["v"] = Tensor::from_vector<double>(DType::f32, {B, H, S, D}, fill(B * H * S * D, 2.9));
  // Mask: mostly visible; batch 1 hides everything in its first query row (boolean) or every key
  // (additive), so some rows are fully masked.
  if (boolean) {
    std::vector<int> m(static_cast<size_t>(B * S * S), 1);
    for (int64_t j = 0; j < S; ++j) m[size_t(S * S + j)] = 0;  // batch 1, query 0: nothing visible
    for (int64_t i = 0; i < S; ++i) m[size_t(i * S + S - 1)] = 0;  // batch 0: the last key hidden
    in["mask"] = Tensor::from_vector<int>(DType::boolean, {B, 1, S, S}, m);
  } else {
    std::vector<int> m(static_cast<size_t>(B * S), 1);
    for (int64_t j = 0; j < S; ++j) m[size_t(S + j)] = 0;  // batch 1: every key hidden
    m[2] = 0;
    in["mask"] = Tensor::from_vector<int>(DType::boolean, {B, 1, 1, S}, m);
  }
  return in;
}

Options private_cache() {
  Options o;
  o.cache_dir = (std::filesystem::temp_directory_path() / ("kiln_masked_test_" + std::to_string(getpid()))).string();
  return o;
}

bool is_scores_shape(const std::string& type) {
  return type == "f32[" + std::to_string(B) + "," + std::to_string(H) + "," + std::to_string(S) + "," +
                     std::to_string(S) + "]";
}

TEST(MaskedSoftmaxPlan, MaskAndGuardJoinTheSoftmaxAndNoOtherScoresBufferExists) {
  Options o = private_cache();
  for (bool boolean : {false, true}) {
    for (bool guard : {false, true}) {
      SCOPED_TRACE(std::string(boolean ? "boolean mask" : "additive mask") + (guard ? ", guarded" : ""));
      Session compiled = Session::from_graph(attention(boolean, guard), Mode::compiled, o, {});
      Session reference = Session::from_graph(attention(boolean, guard), Mode::reference, o, {});
      RunProfile profile;
      auto in = inputs(boolean);
      Tensor got = compiled.run(in, &profile).at("out");
      int softmax_steps = 0, scores_buffers = 0;
      for (const StepProfile& st : profile.steps) {
        if (is_scores_shape(st.output_type)) ++scores_buffers;
        bool has_softmax = false, has_where = false, has_isnan = false;
        for (const std::string& op : st.source_ops) {
          has_softmax |= op == "Softmax";
          has_where |= op == "Where";
          has_isnan |= op == "IsNaN";
        }
        if (!has_softmax) continue;
        ++softmax_steps;
        EXPECT_EQ(st.kind, "generated");
        EXPECT_TRUE(has_where) << "the mask's Where is not in the softmax kernel";
        EXPECT_EQ(has_isnan, guard) << "the guard is not in the softmax kernel";
      }
      EXPECT_EQ(softmax_steps, 1);
      // The scores (MatMul with its scale) and the probabilities: nothing else of [B,H,S,S].
      EXPECT_EQ(scores_buffers, 2);
      Tensor want = reference.run(in).at("out");
      CloseResult r = all_close(convert_tensor(got, DType::f64), want, 1e-5, 1e-6);
      // A fully masked row is NaN without the guard and 0 with it, in both paths.
      EXPECT_TRUE(r.ok) << r.reason;
    }
  }
  std::filesystem::remove_all(o.cache_dir);
}

}  // namespace
}  // namespace kiln
