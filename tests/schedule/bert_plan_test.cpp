// bert's compiled plan (the zoo graph from tests/data/zoo, zero weights of the right size): each of its
// 12 attention softmaxes is one generated kernel holding the mask and the exporter's NaN guard, and
// no [B,H,S,S] buffer exists but the scores and the probabilities of each layer.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/session.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

TEST(BertPlan, EveryMaskedSoftmaxIsOneKernelAndNoMaskOfScoresShapeExists) {
  const fs::path data = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "zoo";
  std::ifstream manifest_file(data / "manifest.json");
  ASSERT_TRUE(manifest_file.good());
  const nlohmann::json bert = nlohmann::json::parse(manifest_file)["models"]["bert"];
  const fs::path dir = fs::temp_directory_path() / ("kiln_bert_plan_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(data / "bert.onnx", dir / "bert.onnx", fs::copy_options::overwrite_existing);
  // Zero weights as a sparse file: the plan does not depend on their values.
  int fd = ::open((dir / bert["weights_file_not_shipped"].get<std::string>()).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, bert["weights_bytes"].get<int64_t>()), 0);
  ::close(fd);

  constexpr int64_t S = 16;
  Options o;
  o.cache_dir = (dir / "cache").string();
  Session s = Session::load_onnx((dir / "bert.onnx").string(), Mode::compiled, o, {{"batch", 1}, {"seq", S}});
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
