// Function-made choices on a small real GEMM, and the output comparison of check().
#include <cmath>
#include <limits>
#include <random>

#include "autotune/choice_helpers.h"
#include "autotune_test_util.h"

namespace kiln::autotune::testing {
namespace {

TEST(OutputsMatch, ToleranceNanAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::string why;
  const float want[] = {1, -2, inf, nan, 1000};
  const float close[] = {1.000001f, -2, inf, nan, 1000.05f};
  EXPECT_TRUE(outputs_match(close, want, 5, {}, why)) << why;
  const float off[] = {1, -2, inf, nan, 1001};
  EXPECT_FALSE(outputs_match(off, want, 5, {}, why));
  EXPECT_NE(why.find("at [4]"), std::string::npos) << why;
  const float lost_nan[] = {1, -2, inf, 0, 1000};
  EXPECT_FALSE(outputs_match(lost_nan, want, 5, {}, why));
  EXPECT_NE(why.find("NaN mismatch at [3]"), std::string::npos) << why;
  const float flipped_inf[] = {1, -2, -inf, nan, 1000};
  EXPECT_FALSE(outputs_match(flipped_inf, want, 5, {}, why));
  EXPECT_NE(why.find("infinity mismatch at [2]"), std::string::npos) << why;
  const double want64[] = {0.1, 0.2};
  const float got[] = {0.1f, 0.2f};
  EXPECT_TRUE(outputs_match(got, want64, 2, {1e-7, 1e-6}, why)) << why;
  EXPECT_FALSE(outputs_match(got, want64, 2, {0, 0}, why));
}

TEST(GuardedBuffer, CatchesWritesOutsideTheOutput) {
  GuardedBuffer buffer(10, 16);
  std::string why;
  for (size_t i = 0; i < buffer.size(); ++i) buffer.data()[i] = std::nanf("");  // any value inside is fine
  EXPECT_TRUE(buffer.intact(why)) << why;
  buffer.data()[10] = 0;
  EXPECT_FALSE(buffer.intact(why));
  EXPECT_EQ(why, "wrote 1 float(s) past the end of its output");
  buffer.reset_guards();
  EXPECT_TRUE(buffer.intact(why));
  buffer.data()[-3] = 1;
  EXPECT_FALSE(buffer.intact(why));
  EXPECT_EQ(why, "wrote 3 float(s) before the start of its output");
}

// C[M,N] = A[M,K] * B[K,N], several ways, checked against an fp64 reference.
struct SmallGemm {
  static constexpr int M = 24, K = 48, N = 40;
  std::vector<float> a = std::vector<float>(M * K), b = std::vector<float>(K * N);
  GuardedBuffer out{M * N};
  float* c = out.data();
  std::vector<double> reference = std::vector<double>(M * N);

  SmallGemm() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += double(a[i * K + k]) * double(b[k * N + j]);
        reference[i * N + j] = s;
      }
  }
  void ijk() {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float s = 0;
        for (int k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
        c[i * N + j] = s;
      }
  }
  void ikj(int k_end = K) {
    std::fill(c, c + M * N, 0.0f);
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < k_end; ++k)
        for (int j = 0; j < N; ++j) c[i * N + j] += a[i * K + k] * b[k * N + j];
  }
  std::unique_ptr<Choice> choice(const std::string& name, std::function<void()> body) {
    return make_choice({name, nullptr, body, [this, body](std::string& why) {
                          std::fill(c, c + M * N, std::nanf(""));
                          out.reset_guards();
                          body();
                          return out.intact(why) && outputs_match(c, reference.data(), out.size(), {1e-5, 1e-4}, why);
                        }});
  }
};

TEST(ChoiceHelpers, RealGemmChoicesThroughTheTuner) {
  TempDir dir;
  SmallGemm g;
  TuneRequest request;
  request.op_signature = "MatMul(A[M,K],B[K,N])";
  request.shape_key = "M=24,K=48,N=40";
  request.dtype = "f32";
  request.device_key = "test";
  request.choices.push_back(g.choice("ijk", [&] { g.ijk(); }));
  request.choices.push_back(g.choice("ikj", [&] { g.ikj(); }));
  request.choices.push_back(g.choice("ikj_drops_last_k", [&] { g.ikj(SmallGemm::K - 1); }));
  request.choices.push_back(g.choice("ikj_overruns", [&] {
    g.ikj();
    g.c[SmallGemm::M * SmallGemm::N + 1] = 0;  // right answer, but writes past the end
  }));
  Warnings w;
  Autotuner tuner(test_options(), dir.db(), w.sink());
  TuneResult r = tuner.tune(request);
  EXPECT_NE(r.winner, "ikj_drops_last_k");
  EXPECT_EQ(r.table[2].status, CandidateStatus::wrong);
  EXPECT_NE(r.table[2].note.find("max error"), std::string::npos) << r.table[2].note;
  EXPECT_TRUE(w.any_contains("candidate 'ikj_drops_last_k'"));
  EXPECT_NE(r.winner, "ikj_overruns");
  EXPECT_EQ(r.table[3].status, CandidateStatus::wrong);
  EXPECT_NE(r.table[3].note.find("wrote 2 float(s) past the end"), std::string::npos) << r.table[3].note;
  // The winner, run by the caller, gives the right answer.
  request.choices[r.winner_index]->run();
  std::string why;
  EXPECT_TRUE(outputs_match(g.c, g.reference.data(), g.out.size(), {1e-5, 1e-4}, why)) << why;
  EXPECT_THROW(make_choice({"no_run", nullptr, nullptr, nullptr}), InternalError);
}

}  // namespace
}  // namespace kiln::autotune::testing
