// The fixture of the `kiln bench` / `kiln profile` CLI tests: a private folder holding a tiny model built
// here and saved as .onnx (zoo/tiny/tiny.onnx), and kiln run on it with a private kernel cache.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <onnx/onnx.pb.h>
#include <random>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "common/processes.h"

namespace bench_cli {
namespace fs = std::filesystem;
using nlohmann::json;

using Result = kiln::test_common::CommandResult;

class BenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_bench_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "zoo" / "tiny");
    write_tiny_model((dir_ / "zoo" / "tiny" / "tiny.onnx").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs kiln with a private kernel cache (stderr folded into the output). KILN_TEST_BINARY names another
  // kiln than the build's (the bundle scripts/device_run.sh unpacks on the GPU machine).
  Result kiln(const std::string& args) {
    const char* other = std::getenv("KILN_TEST_BINARY");
    return kiln::test_common::run_command("KILN_CACHE_DIR=" + (dir_ / "cache").string() + " " +
                                          (other && *other ? other : KILN_BINARY) + " " + args + " 2>&1");
  }
  std::string model() const { return (dir_ / "zoo" / "tiny" / "tiny.onnx").string(); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // x f32[batch, 8] -> erf(x) + x*x -> MatMul -> Add -> Relu -> MatMul -> Softmax -> y f32[batch, 4]
  static void write_tiny_model(const std::string& path) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    auto* opset = m.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("tiny");
    auto value_info = [](onnx::ValueInfoProto* vi, const std::string& name, int last) {
      vi->set_name(name);
      auto* tt = vi->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      tt->mutable_shape()->add_dim()->set_dim_param("batch");
      tt->mutable_shape()->add_dim()->set_dim_value(last);
    };
    value_info(g->add_input(), "x", 8);
    value_info(g->add_output(), "y", 4);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    auto init = [&](const std::string& name, std::vector<int64_t> dims) {
      auto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT);
      int64_t n = 1;
      for (int64_t d : dims) t->add_dims(d), n *= d;
      for (int64_t i = 0; i < n; ++i) t->add_float_data(normal(rng));
    };
    init("w1", {8, 16});
    init("b1", {16});
    init("w2", {16, 4});
    auto node = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
      auto* n = g->add_node();
      n->set_op_type(op);
      n->set_name(op + "_" + out);
      for (auto& i : ins) n->add_input(i);
      n->add_output(out);
    };
    node("Erf", {"x"}, "e");  // a pointwise group: a generated kernel in compiled mode
    node("Mul", {"x", "x"}, "xx");
    node("Add", {"e", "xx"}, "a");
    node("MatMul", {"a", "w1"}, "h");
    node("Add", {"h", "b1"}, "hb");
    node("Relu", {"hb"}, "r");
    node("MatMul", {"r", "w2"}, "z");
    node("Softmax", {"z"}, "y");
    std::ofstream f(path, std::ios::binary);
    ASSERT_TRUE(m.SerializeToOstream(&f));
  }

  fs::path dir_;
};

inline json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace bench_cli
