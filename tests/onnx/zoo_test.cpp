// The model zoo's graph files (/work/shared/zoo): they import with the counts the manifest records.
// Their weight files are not shipped; the tests write zero-filled sparse files of the right size.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

const fs::path kZoo = "/work/shared/zoo";

nlohmann::json manifest() {
  std::ifstream f(kZoo / "manifest.json");
  return nlohmann::json::parse(f);
}

void make_sparse_file(const std::string& path, int64_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, size), 0);
  ::close(fd);
}

class OnnxZoo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kZoo / "manifest.json")) GTEST_SKIP() << "no model zoo at " << kZoo;
    info_ = manifest()["models"];
  }
  // Copies the graph file into the temp dir, with a weights file of `weight_bytes` (< 0: none).
  std::string stage(const std::string& model, int64_t weight_bytes) {
    const auto& m = info_[model];
    std::string graph = m["graph_file"];
    fs::copy_file(kZoo / graph, dir_.path() / graph, fs::copy_options::overwrite_existing);
    std::string weights = dir_.file(m["weights_file_not_shipped"]);
    fs::remove(weights);
    if (weight_bytes >= 0) make_sparse_file(weights, weight_bytes);
    return dir_.file(graph);
  }
  TempDir dir_;
  nlohmann::json info_;
};

TEST_F(OnnxZoo, BertImportsWithTheRightCounts) {
  const auto& m = info_["bert"];
  Graph g = import_onnx(stage("bert", m["external_total_bytes"].get<int64_t>()), Options{});
  EXPECT_EQ(g.nodes.size(), m["n_nodes"].get<size_t>());
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "input_ids");
  EXPECT_EQ(type_string(g.value(g.inputs[0]).type), "i64[batch,seq]");
  EXPECT_EQ(g.value(g.inputs[1]).name, "attention_mask");
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs[0]).name, "logits");
  EXPECT_EQ(type_string(g.value(g.outputs[0]).type), "f32[batch,seq,30522]");

  // Every initializer is a constant; external ones wrap one mapping (consecutive offsets).
  const auto& ext = m["external_tensors"];
  const Value& first = g.value(*g.find_value(ext[0]["name"].get<std::string>()));
  const Value& second = g.value(*g.find_value(ext[1]["name"].get<std::string>()));
  ASSERT_TRUE(first.constant && second.constant);
  EXPECT_EQ(first.constant->shape(), ext[0]["dims"].get<std::vector<int64_t>>());
  EXPECT_EQ(static_cast<const char*>(second.constant->raw()) - static_cast<const char*>(first.constant->raw()),
            ext[0]["nbytes"].get<int64_t>());
  EXPECT_EQ(first.constant->as_double(12345), 0.0);
  int constants = 0;
  for (const Value& v : g.values) constants += v.constant != nullptr;
  EXPECT_GE(constants, m["n_initializers"].get<int>());
}

TEST_F(OnnxZoo, EveryModelImports) {
  for (const auto& [name, m] : info_.items()) {
    SCOPED_TRACE(name);
    Graph g;
    ASSERT_NO_THROW(g = import_onnx(stage(name, m["external_total_bytes"].get<int64_t>()), Options{}));
    EXPECT_EQ(g.nodes.size(), m["n_nodes"].get<size_t>());
    EXPECT_EQ(g.outputs.size(), m["outputs"].size());
    ASSERT_EQ(g.inputs.size(), m["inputs"].size());
    for (size_t i = 0; i < g.inputs.size(); ++i)
      EXPECT_EQ(g.value(g.inputs[i]).name, m["inputs"][i]["name"].get<std::string>());
  }
}

TEST_F(OnnxZoo, MissingOrShortWeightsAreUserErrors) {
  const auto& m = info_["bert"];
  std::string weights = m["weights_file_not_shipped"];
  try {
    import_onnx(stage("bert", -1), Options{});
    ADD_FAILURE() << "imported without its weights";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(weights), std::string::npos) << e.what();
  }
  EXPECT_THROW(import_onnx(stage("bert", m["external_total_bytes"].get<int64_t>() - 4), Options{}), UserError);
}

}  // namespace
}  // namespace kiln::testing
