// The PyTorch peer's plumbing on the host (report/torch_peer.h), with shell scripts standing in for
// python3: what the probe makes of an interpreter, which models and sizes torch_peer.py serves, how
// its JSON lines are read (a failure keeps what came before it) and how they sit in a bench record.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "kiln/errors.h"
#include "report/torch_peer.h"

namespace kiln::report {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class TorchPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_torch_peer_test_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A shell script at DIR/name that runs `body`.
  std::string script(const std::string& name, const std::string& body) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }
  std::string probe_answering(const std::string& json_line) { return script("python3", "echo '" + json_line + "'\n"); }
  static std::string error_of(const std::string& python) {
    try {
      locate_torch(python);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(TorchPeer, TheProbeSaysWhatTheInterpreterLacks) {
  EXPECT_NE(error_of(probe_answering(R"({"torch": null, "why": "ModuleNotFoundError: x"})")).find("PyTorch is not installed"),
            std::string::npos);
  EXPECT_NE(error_of(probe_answering(R"({"torch": "2.5+cpu", "cuda": false, "transformers": "4"})")).find("sees no GPU"),
            std::string::npos);
  EXPECT_NE(error_of(probe_answering(R"({"torch": "2.5", "cuda": true, "gpu": "G", "transformers": null})"))
                .find("transformers is not installed"),
            std::string::npos);
  EXPECT_NE(error_of(script("python3", "echo not json\n")).find("did not answer"), std::string::npos);
  EXPECT_NE(error_of(script("python3", "exit 3\n")).find("exit status 3"), std::string::npos);
  EXPECT_NE(error_of((dir_ / "missing").string()).find("not an executable"), std::string::npos);

  const TorchLocation ok = locate_torch(probe_answering(R"({"torch": "2.5", "cuda": true, "gpu": "G", "transformers": "4"})"));
  EXPECT_EQ(ok.version, "2.5");
  EXPECT_EQ(ok.gpu, "G");
  EXPECT_EQ(ok.script.filename(), "torch_peer.py");
  EXPECT_TRUE(fs::exists(ok.script)) << ok.script;
}

TEST_F(TorchPeer, OnlyTheZoosModelsAtTheScriptsSizes) {
  EXPECT_EQ(torch_peer_refuses("bert", json{{"batch", 1}, {"seq", 128}}), "");
  EXPECT_EQ(torch_peer_refuses("resnet18", json{{"batch", 1}}), "");
  EXPECT_NE(torch_peer_refuses("bert", json{{"batch", 1}, {"seq", 64}}).find("batch=1 seq=128 only"), std::string::npos);
  EXPECT_NE(torch_peer_refuses("trocr_small", json{{"batch", 1}}).find("dec_seq=32"), std::string::npos);
  EXPECT_NE(torch_peer_refuses("tiny", json::object()).find("no PyTorch model 'tiny'"), std::string::npos);
  // The list agrees with the script's own.
  std::ifstream f(fs::path(KILN_SOURCE_DIR) / "scripts" / "torch_peer.py");
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  for (const auto& [name, sizes] : torch_peer_models())
    EXPECT_NE(text.find("name == \"" + name + "\""), std::string::npos) << name;
}

TEST_F(TorchPeer, ReadsItsJsonLinesAndKeepsThemPastAFailure) {
  TorchLocation where;
  where.python = script("python3", R"(echo "$@" > )" + (dir_ / "args").string() + R"(
echo '{"model": "bert", "dtype": "fp32", "mode": "eager", "median_ms": 3.0}'
echo 'a table line'
echo '{"model": "gpt2", "dtype": "fp32", "mode": "eager", "median_ms": 4.0}'
echo '{"model": "bert", "dtype": "fp32", "mode": "default", "median_ms": 2.0}'
exit 5
)");
  where.script = "torch_peer.py";
  TorchRequest request;
  request.models = {"bert", "gpt2"};
  request.dtypes = {"fp32"};
  request.modes = {"eager", "default"};
  request.iters = 7;
  request.warmup = 3;
  request.budget_s = 60;
  const TorchResults got = run_torch_peer(where, request, dir_ / "out");
  ASSERT_EQ(got.lines.size(), 2u);
  ASSERT_EQ(got.lines.at("bert").size(), 2u);
  EXPECT_EQ(got.lines.at("bert")[1]["mode"], "default");
  EXPECT_EQ(got.lines.at("gpt2").size(), 1u);
  EXPECT_NE(got.failure.find("exit status 5"), std::string::npos) << got.failure;
  std::ifstream args(dir_ / "args");
  std::string line;
  std::getline(args, line);
  EXPECT_EQ(line, "torch_peer.py --models bert,gpt2 --dtypes fp32 --modes eager,default --iters 7 --warmup 3 "
                  "--budget 60 --out " + (dir_ / "out").string());

  where.python = script("python3", "exit 0\n");
  EXPECT_TRUE(run_torch_peer(where, request, dir_).failure.empty());
  where.python = dir_ / "absent";
  EXPECT_NE(run_torch_peer(where, request, dir_).failure.find("cannot start"), std::string::npos);
}

TEST_F(TorchPeer, TheBestModeSitsBesideKilnsTime) {
  json record = {{"model", "bert"}, {"compiled_ms", 2.0}};
  add_torch_times(record,
                  {json{{"model", "bert"}, {"dtype", "fp32"}, {"mode", "eager"}, {"median_ms", 5.0}},
                   json{{"model", "bert"}, {"dtype", "bf16"}, {"mode", "eager"}, {"median_ms", 1.0}},  // another dtype
                   json{{"model", "bert"}, {"dtype", "fp32"}, {"mode", "default"}, {"median_ms", 3.0}},
                   json{{"model", "bert"}, {"dtype", "fp32"}, {"mode", "reduce-overhead"}, {"median_ms", nullptr},
                        {"error", "deadline"}}},
                  "fp32");
  EXPECT_EQ(record["torch_best_mode"], "default");
  EXPECT_EQ(record["torch_best_ms"], 3.0);
  EXPECT_DOUBLE_EQ(record["torch_vs_kiln"].get<double>(), 1.5);
  EXPECT_EQ(record["torch"]["eager"]["median_ms"], 5.0);
  EXPECT_EQ(record["torch"]["reduce-overhead"]["error"], "deadline");
  EXPECT_FALSE(record.contains("torch_error"));

  json failed = {{"model", "vit"}, {"compiled_ms", 2.0}};
  add_torch_times(failed, {json{{"model", "vit"}, {"dtype", "fp32"}, {"mode", "*"}, {"error", "OOM"}}}, "fp32");
  EXPECT_TRUE(failed["torch_vs_kiln"].is_null());
  EXPECT_EQ(failed["torch_error"], "*: OOM");
}

}  // namespace
}  // namespace kiln::report
