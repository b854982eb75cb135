// Every bad value on the command line or in the environment is refused before work starts, with a
// message that names what was wrong and what is accepted; --version and `kiln settings` say what runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/processes.h"
#include "common/temp_dir.h"
#include "kiln/tensor_io.h"

namespace {
namespace fs = std::filesystem;
using kiln::test_common::CommandResult;

// Runs `env kiln args` with stderr folded into the output.
CommandResult kiln(const std::string& args, const std::string& env = "") {
  return kiln::test_common::run_command(env + (env.empty() ? "" : " ") + std::string(KILN_BINARY) + " " + args + " 2>&1");
}

// Expects exit code 1, "kiln: error: " and every piece of `message` in the output.
void expect_refused(const std::string& args, const std::vector<std::string>& message, const std::string& env = "") {
  CommandResult r = kiln(args, env);
  EXPECT_EQ(r.code, 1) << env << " kiln " << args << "\n" << r.out;
  EXPECT_NE(r.out.find("kiln: error: "), std::string::npos) << args << "\n" << r.out;
  for (const std::string& m : message) EXPECT_NE(r.out.find(m), std::string::npos) << args << ": no '" << m << "' in\n" << r.out;
  EXPECT_EQ(r.out.find("latency"), std::string::npos) << args << ": it ran\n" << r.out;
}

TEST(CliValues, VersionNamesKilnItsCommitAndLibraries) {
  CommandResult r = kiln("--version");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("kiln " KILN_VERSION " (commit "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oneDNN "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OpenBLAS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CUDA backend: "), std::string::npos) << r.out;
}

TEST(CliValues, SettingsOutsideTheirValuesAreRefused) {
  expect_refused("run --set autotune=maybe", {"setting autotune: 'maybe' is not one of off, fast, max"});
  expect_refused("run --set softmax_route=wide", {"setting softmax_route: 'wide'", "auto, fused, library, eager"});
  expect_refused("run --set gemm_backends=onednn,cublas", {"'cublas' is not one of template, onednn, blas"});
  expect_refused("run --set gemm_backends=blas,blas", {"'blas' is listed twice"});
  expect_refused("run --set threads=-2", {"setting threads: -2 is not a number of at least 0"});
  expect_refused("run --set autotune_budget_s=nan", {"setting autotune_budget_s: nan is not a number of at least 0"});
  expect_refused("run --set gemm_backends=", {"setting gemm_backends: needs at least one of template, onednn, blas"});
  expect_refused("run --set max_rank=x", {"setting max_rank: 'x' is not an integer"});
  expect_refused("run --set cuda_attention_warps=3", {"setting cuda_attention_warps: 3 is not one of 0, 1, 2, 4"});
  expect_refused("run --set cuda_graphs=maybe", {"is not a boolean"});
  expect_refused("run --device tpu", {"setting device: 'tpu' is not one of cpu, cuda, cuda:N"});
  expect_refused("run --device cuda:x", {"'cuda:x' is not one of"});
  expect_refused("run --precision fp8", {"setting precision: 'fp8' is not one of fp32, bf16, fp16"});
  // The environment goes through the same table.
  expect_refused("run", {"setting debug: 'bogus' is not one of ir, route, fusion, codegen, ops, time, all"}, "KILN_DEBUG=bogus");
  expect_refused("run", {"setting debug: 'ir,' ends with a comma"}, "KILN_DEBUG=ir,");
  expect_refused("run", {"setting autotune: 'slow'"}, "KILN_AUTOTUNE=slow");
  expect_refused("run", {"setting cuda_attention_warps: 8 is not one of"}, "KILN_CUDA_ATTENTION_WARPS=8");
}

TEST(CliValues, GoodValuesStillRun) {
  for (const std::string& args : {std::string("run --set debug= --iters 1"), std::string("run --set autotune=off --iters 1"),
                                  std::string("run --set gemm_backends=blas,template --iters 1"),
                                  std::string("run --set cuda_attention_warps=4 --iters 1")}) {
    CommandResult r = kiln(args, "KILN_DEBUG=ops,route");
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  }
}

TEST(CliValues, DimsAndInputsAreCheckedAgainstTheModel) {
  // The bundled model's input is input_ids: i64[batch, seq].
  expect_refused("run --dim btch=1", {"--dim btch=1: the model's inputs have no dimension 'btch' (their symbols: batch, seq)"});
  expect_refused("run --dim seq=4 --dim seq=8", {"--dim seq: given twice"});
  kiln::test_common::TempDir dir("kiln-cli-values");
  const std::string ids = (dir.root() / "ids.npy").string(), flat = (dir.root() / "flat.npy").string();
  kiln::write_npy(ids, kiln::Tensor::from_vector<int64_t>(kiln::DType::i64, {1, 4}, {1, 2, 3, 4}));
  kiln::write_npy(flat, kiln::Tensor::from_vector<int64_t>(kiln::DType::i64, {4}, {1, 2, 3, 4}));
  expect_refused("run --input input_ids=" + ids + " --input input_ids=" + ids, {"--input input_ids: given twice"});
  expect_refused("run --input input_ids=" + flat,
                 {"input 'input_ids': the model expects rank 2 (i64[batch,seq]), the given tensor has shape [4]"});
  expect_refused("run --input input_ids=" + ids + " --dim seq=8",
                 {"input 'input_ids': dimension 1 ('seq') is 4, but --dim seq=8 gives seq = 8"});
  CommandResult r = kiln("run --input input_ids=" + ids + " --dim seq=4 --iters 1");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(CliValues, AModelsErrorNamesTheFile) {
  kiln::test_common::TempDir dir("kiln-cli-corrupt");
  const std::string model = (dir.root() / "corrupt.onnx").string();
  {
    std::ofstream f(model, std::ios::binary);
    f << "\x08\x07\x12\xff\xff\xff garbage";
  }
  expect_refused("run " + model, {model + ": not a valid ONNX model"});
}

TEST(CliValues, ParseErrorsOfACommandDoNotPointAtTheCommandList) {
  CommandResult bad_flag = kiln("run --threads -3");
  EXPECT_EQ(bad_flag.code, 1) << bad_flag.out;
  EXPECT_NE(bad_flag.out.find("--threads"), std::string::npos) << bad_flag.out;
  EXPECT_EQ(bad_flag.out.find("kiln --help lists the commands"), std::string::npos) << bad_flag.out;
  CommandResult no_command = kiln("frobnicate");
  EXPECT_EQ(no_command.code, 1) << no_command.out;
  EXPECT_NE(no_command.out.find("kiln --help lists the commands"), std::string::npos) << no_command.out;
}

TEST(CliValues, RunTimesSeveralIterationsAfterAWarmupByDefault) {
  CommandResult r = kiln("run --json --dim seq=8");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["warmup"], 1);
  EXPECT_GT(j["iters"].get<int>(), 1);  // the demo runs in well under the second the default allows
  EXPECT_LE(j["iters"].get<int>(), 20);
  EXPECT_LE(j["latency_ms"].get<double>(), j["latency_p90_ms"].get<double>());
  EXPECT_LE(j["latency_p90_ms"].get<double>(), j["latency_p99_ms"].get<double>());
  EXPECT_LE(j["latency_p99_ms"].get<double>(), j["latency_max_ms"].get<double>());
  // Memory beside the weights: the process holds at least its constants.
  EXPECT_GT(j["constant_bytes"].get<int64_t>(), 100000);  // the demo's weights: about 0.5 MB
  EXPECT_GT(j["peak_resident_bytes"].get<int64_t>(), j["constant_bytes"].get<int64_t>());
}

TEST(CliValues, SettingsShowDefaultCurrentAndAcceptedValues) {
  CommandResult r = kiln("settings --set autotune=max", "KILN_THREADS=3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("autotune (std::string, KILN_AUTOTUNE)\n    default: 'fast'   current: 'max'   accepts one of: off fast max"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("threads (int64_t, KILN_THREADS)\n    default: '0'   current: '3'   accepts at least 0"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cxx (std::string, KILN_CXX) [changes code]\n    default: 'c++'\n"), std::string::npos) << r.out;
}

TEST(CliValues, CompilesShowProgressOnATerminalOnly) {
  kiln::test_common::TempDir dir("kiln-cli-progress");
  const std::string cache = "KILN_CACHE_DIR=" + (dir.root() / "cache").string() + " KILN_AUTOTUNE=off";
  // A pipe (the test's own popen): nothing but the run's report.
  CommandResult piped = kiln("run --iters 1 --dim seq=8", cache);
  ASSERT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find("[compile]"), std::string::npos) << piped.out;
  // A terminal (script(1) gives the command one), on a cold cache of its own: the count of compiles.
  const std::string cold = "KILN_CACHE_DIR=" + (dir.root() / "cold").string() + " KILN_AUTOTUNE=off";
  CommandResult tty = kiln::test_common::run_command("script -qec '" + cold + " " + KILN_BINARY +
                                                     " run --iters 1 --dim seq=8' /dev/null 2>&1");
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("generated kernels compiled"), std::string::npos) << tty.out;
}

}  // namespace
