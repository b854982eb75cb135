// bert's compiled plan (the zoo graph from tests/data/zoo, zero weights of the right size): each of its
// 12 attention softmaxes is one generated kernel holding the mask and the exporter's NaN guard, and
// no [B,H,S,S] buffer exists but the scores and the probabilities of each layer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/zoo_models.h"
#include "kiln/session.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

TEST(BertPlan, EveryMaskedSoftmaxIsOneKernelAndNoMaskOfScoresShapeExists) {
  const fs::path dir = fs::temp_directory_path() / ("kiln_bert_plan_" + std::to_string(getpid()));
  const fs::path model = test_common::zoo_graph_with_zero_weights("bert", dir);
  ASSERT_FALSE(model.empty()) << "no zoo graph in tests/data/zoo";

  constexpr int64_t S = 16;
  Options o;
  o.cache_dir = (dir / "cache").string();
  Session s = Session::load_onnx(model.string(), Mode::compiled, o, {{"batch", 1}, {"seq", S}});
  std::vector<int64_t> ids(S, 101), mask(S, 1);
  mask[S - 1] = mask[S - 2] = 0;  // padding: masked keys
  RunProfile profile;
  s.run({{"input_ids", Tensor::from_vector<int64_t>(DType::i64, {1, S}, ids)},
         {"attention_mask", Tensor::from_vector<int64_t>(DType::i64, {1, S}, mask)}},
        &profile);
  const std::string scores_type = "f32[1,12," + std::to_string(S) + "," + std::to_string(S) + "]";
  int softmax_kernels = 0, scores_buffers = 0;
  for (const StepProfile& st : profile.steps) {
    if (st.output_type == scores_type) ++scores_buffers;
    bool softmax = false, where = false, isnan = false;
    for (const std::string& op : st.source_ops) {
      softmax |= op == "Softmax";
      where |= op == "Where";
      isnan |= op == "IsNaN";
    }
    if (!softmax) continue;
    ++softmax_kernels;
    EXPECT_EQ(st.kind, "generated") << st.label;
    EXPECT_TRUE(where) << st.label << ": the mask is not in the softmax kernel";
    EXPECT_TRUE(isnan) << st.label << ": the guard is not in the softmax kernel";
  }
  EXPECT_EQ(softmax_kernels, 12);
  EXPECT_EQ(scores_buffers, 24);  // per layer: the scaled scores and the probabilities
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
