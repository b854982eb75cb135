// The GEMM template's source (backend/cuda/cuda_gemm_template_source.h) compiles with NVRTC without a
// GPU: every default config with both B layouts, in bf16 and f16 with the fullest epilogue for sm_90a,
// in bf16 with bias + GELU for sm_80; every epilogue form, dtype and layout on a plain and a split-K
// config for sm_90a (about 80 programs, a second each, compiled four at a time). The cubin's own record
// (and ptxas's -v report, where NVRTC's log has it) says no stack frame and fewer than 255 registers.
// The source says what its config says. The GPU tests in tests/cuda_session/cuda_gemm_template_test.cpp
// run it against an fp64 reference.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "backend/cuda/cubin_info.h"
#include "backend/cuda/cuda_gemm_template_source.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"

namespace kiln::backend::cuda::testing {
namespace {

class GemmTemplateNvrtc : public NvrtcTest {};

const GemmTemplateEpilogue kBare{}, kBias{true}, kBiasGelu{true, GemmActivation::gelu},
    kBiasRelu{true, GemmActivation::relu}, kBiasGeluResidual{true, GemmActivation::gelu, true};

struct Case {
  GemmTemplateSpec spec;
  std::string arch;
};

std::string describe(const Case& c) {
  return fmt::format("{} {} B{} {} {}", gemm_config_name(c.spec.config), dtype_name(c.spec.dtype),
                     c.spec.trans_b ? "[N,K]" : "[K,N]", gemm_epilogue_name(c.spec.epilogue), c.arch);
}

// Compiles each case (a few NVRTC programs at once: each takes about a second) with ptxas's report,
// and checks the report: every log line is ptxas's, no spills, registers under 255.
void compile_all(const std::vector<Case>& cases) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto work = [&] {
    for (size_t i; (i = next++) < cases.size();) {
      const Case& c = cases[i];
      std::string problem;
      try {
        const std::string code = gemm_template_source("gemm_test", c.spec);
        const CompiledCubin cubin = compile_to_cubin(code, "gemm_test.cu", c.arch, {"--ptxas-options=-v"});
        std::istringstream log(cubin.log);
        int logged_registers = -1;
        for (std::string line; std::getline(log, line);) {
          if (line.empty()) continue;
          if (line.rfind("ptxas", 0) != 0) problem += "log: " + line + "\n";
          // ptxas's performance notes (C7508 setmaxnreg ignored, C7517 / C7518 wgmma waited on or serialised).
          if (line.find("(C75") != std::string::npos) problem += "ptxas: " + line + "\n";
          std::smatch mm;
          if (std::regex_search(line, mm, std::regex("([0-9]+) bytes spill (stores|loads)")) && mm[1] != "0")
            problem += "spills: " + line + "\n";
          if (std::regex_search(line, mm, std::regex("Used ([0-9]+) registers")))
            logged_registers = std::max(logged_registers, std::stoi(mm[1]));
        }
        // The cubin's own record (the log has no ptxas report on some NVRTC installations): no stack
        // frame at all (spills or local arrays), fewer than 255 registers, as the log says where it speaks.
        int registers = -1;
        for (const auto& [kernel, info] : cubin_kernels(cubin.cubin)) {
          if (info.registers <= 0) problem += fmt::format("{}: no register count in the cubin\n", kernel);
          registers = std::max(registers, info.registers);
          if (info.frame_bytes != 0) problem += fmt::format("{}: a {}-byte stack frame\n", kernel, info.frame_bytes);
        }
        if (registers <= 0 || registers >= 255) problem += fmt::format("{} registers\n", registers);
        if (logged_registers >= 0 && logged_registers != registers)
          problem += fmt::format("ptxas logged {} registers, the cubin records {}\n", logged_registers, registers);
        if (cubin.cubin.empty()) problem += "no cubin\n";
      } catch (const std::exception& e) {
        problem += e.what();
      }
      if (!problem.empty()) {
        std::lock_guard lock(mutex);
        failures.push_back(describe(c) + ": " + problem);
      }
    }
  };
  std::vector<std::thread> threads;
  const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  for (unsigned i = 0; i < n; ++i) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

TEST_F(GemmTemplateNvrtc, EveryDefaultConfigCompilesForSm90aAndSm80) {
  std::vector<Case> cases;
  for (const GemmTemplateConfig& config : default_gemm_template_configs())
    for (DType t : {DType::bf16, DType::f16})
      for (bool trans_b : {false, true}) {
        cases.push_back({{t, trans_b, kBiasGeluResidual, config}, "sm_90a"});
        if (t == DType::bf16) cases.push_back({{t, trans_b, kBiasGelu, config}, "sm_80"});
      }
  compile_all(cases);
}

TEST_F(GemmTemplateNvrtc, EveryEpilogueCompiles) {
  std::vector<Case> cases;
  const std::vector<GemmTemplateConfig> configs = default_gemm_template_configs();
  const GemmTemplateConfig plain = configs[1], split = configs.back();
  ASSERT_EQ(plain.split_k, 1);
  ASSERT_GT(split.split_k, 1);
  for (const GemmTemplateConfig& config : {plain, split})
    for (const GemmTemplateEpilogue& e : {kBare, kBias, kBiasGelu, kBiasRelu, GemmTemplateEpilogue{false, GemmActivation::none, true}})
      for (DType t : {DType::bf16, DType::f16})
        for (bool trans_b : {false, true}) cases.push_back({{t, trans_b, e, config}, "sm_90a"});
  compile_all(cases);
}

// The Hopper kernel: every config with every epilogue form, bf16 and f16, for sm_90a; ptxas must take
// setmaxnreg (no C7508 warning) and keep the wgmma chain asynchronous (no serialization warning), which
// compile_all sees as log lines that are not ptxas's report.
TEST_F(GemmTemplateNvrtc, EveryHopperConfigCompilesForSm90a) {
  std::vector<Case> cases;
  for (const GemmTemplateConfig& config : hopper_gemm_template_configs())
    for (DType t : {DType::bf16, DType::f16}) cases.push_back({{t, true, kBiasGeluResidual, config}, "sm_90a"});
  // Every epilogue form on a plain config, a split-K through the workspace and a split-K in a cluster.
  std::vector<GemmTemplateConfig> forms{hopper_gemm_template_configs().front()};
  for (bool cluster : {false, true})
    for (const GemmTemplateConfig& c : hopper_gemm_template_configs())
      if (c.split_k > 1 && c.cluster_reduce == cluster) {
        forms.push_back(c);
        break;
      }
  ASSERT_EQ(forms.size(), 3u);
  for (const GemmTemplateConfig& config : forms)
    for (const GemmTemplateEpilogue& e : {kBare, kBias, kBiasGelu, kBiasRelu})
      cases.push_back({{DType::bf16, true, e, config}, "sm_90a"});
  compile_all(cases);
}

// LayerNorm folded into the product (row_norm): every Hopper config without split-K, with the epilogues
// it goes with (the Q/K/V product's bias, FFN1's bias + GELU), compiles without spills or a stack frame.
TEST_F(GemmTemplateNvrtc, EveryHopperConfigCompilesWithRowNorm) {
  std::vector<Case> cases;
  for (const GemmTemplateConfig& config : hopper_gemm_template_configs())
    if (config.split_k == 1)
      for (GemmTemplateEpilogue e : {kBias, kBiasGelu}) {
        e.row_norm = true;
        cases.push_back({{DType::bf16, true, e, config}, "sm_90a"});
      }
  ASSERT_GE(cases.size(), 4u);
  compile_all(cases);
}

// row_norm needs whole rows of A in one block: the mma.sync kernel and split-K are refused.
TEST(GemmTemplateSource, RowNormIsRefusedWhereARowIsSplit) {
  GemmTemplateEpilogue norm{true};
  norm.row_norm = true;
  EXPECT_EQ(gemm_epilogue_name(norm), "norm_bias");
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) {
    const GemmTemplateSpec spec{DType::bf16, true, norm, c};
    if (c.split_k > 1) {
      EXPECT_THROW(gemm_template_source("k", spec), InternalError) << gemm_config_name(c);
    } else {
      const std::string code = gemm_template_source("k", spec);
      EXPECT_NE(code.find("#define EPI_NORM 1"), std::string::npos);
      EXPECT_NE(code.find("kiln_norm_step(tile"), std::string::npos);
    }
  }
  EXPECT_THROW(gemm_template_source("k", {DType::bf16, true, norm, default_gemm_template_configs().front()}),
               InternalError)
      << "mma.sync";
  // Without it the helpers stay out of the compiled text.
  EXPECT_EQ(gemm_template_source("k", {DType::bf16, true, kBias, hopper_gemm_template_configs().front()})
                .find("#define EPI_NORM"),
            std::string::npos);
}

TEST(GemmTemplateSource, TheHopperKernelSaysWhatItsConfigSays) {
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) {
    const GemmTemplateSpec spec{DType::bf16, true, kBiasGelu, c};
    const std::string code = gemm_template_source("k", spec);
    auto has = [&](const std::string& s) { return code.find(s) != std::string::npos; };
    EXPECT_TRUE(has(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16", c.bn))) << gemm_config_name(c);
    EXPECT_TRUE(has(fmt::format("#define THREADS {}\n", 128 * (1 + c.bm / 64))));
    EXPECT_TRUE(has("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"));
    EXPECT_TRUE(has(fmt::format("#define BM {}\n#define BN {}\n#define BK 64\n", c.bm, c.bn)));
    EXPECT_TRUE(has(fmt::format("#define SPLIT_K {}\n", c.split_k)));
    EXPECT_TRUE(has(fmt::format("#define CLUSTER_K {}\n", c.cluster_reduce ? c.split_k : 0)));
    // The cluster shape is in the source text; which configs use it is CLUSTER_K's value.
    EXPECT_TRUE(has("#define KILN_CLUSTER __cluster_dims__(CLUSTER_K, 1, 1)"));
    EXPECT_EQ(c.cluster_reduce, c.split_k > 1 && gemm_config_name(c).find("_kc") != std::string::npos);
    EXPECT_LE(gemm_template_shared_bytes(spec), size_t{227} * 1024) << "past the H200's shared memory";
    EXPECT_EQ(kernels_starting_with_the_prologue(code, gemm_config_name(c)), 2) << "the kernel and its reduce";
  }
  const GemmTemplateConfig big{128, 256, 64, 0, 0, 4, 1, 8, GemmFamily::wgmma, true};
  EXPECT_EQ(gemm_config_name(big), "wg128x256x64_s4_g8_p");
  // Four stages of a 128 x 64 A box and a 256 x 64 B box, 1 KB of alignment slack, eight mbarriers.
  EXPECT_EQ(gemm_template_shared_bytes({DType::bf16, true, kBare, big}), size_t{4} * 384 * 128 + 1024 + 64);
  // A cluster reduce adds the tile's fp32 partials.
  const GemmTemplateConfig cluster{128, 64, 64, 0, 0, 6, 4, 8, GemmFamily::wgmma, false, true};
  EXPECT_EQ(gemm_config_name(cluster), "wg128x64x64_s6_g8_kc4");
  EXPECT_EQ(gemm_template_shared_bytes({DType::bf16, true, kBare, cluster}),
            size_t{6} * 192 * 128 + 1024 + 96 + 128 * 64 * 4);
  int clusters = 0;
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) clusters += c.cluster_reduce;
  EXPECT_GE(clusters, 1) << "the autotuner times cluster reduces";
  auto source = [](GemmTemplateConfig c, bool trans_b = true) {
    return gemm_template_source("k", GemmTemplateSpec{DType::bf16, trans_b, {}, c});
  };
  EXPECT_THROW(source(big, false), InternalError) << "B as [K,N]";
  EXPECT_THROW(source({192, 128, 64, 0, 0, 4, 1, 8, GemmFamily::wgmma}), InternalError) << "192 rows";
  EXPECT_THROW(source({128, 264, 64, 0, 0, 4, 1, 8, GemmFamily::wgmma}), InternalError) << "BN past 256";
  EXPECT_THROW(source({128, 128, 32, 0, 0, 4, 1, 8, GemmFamily::wgmma}), InternalError) << "BK 32";
  EXPECT_THROW(source({128, 128, 64, 0, 0, 9, 1, 8, GemmFamily::wgmma}), InternalError) << "9 stages";
  EXPECT_THROW(source({128, 128, 32, 2, 4, 3, 1, 8, GemmFamily::mma_sync, true}), InternalError) << "persistent mma_sync";
  EXPECT_THROW(source({128, 64, 64, 0, 0, 4, 4, 8, GemmFamily::wgmma, true, true}), InternalError)
      << "a persistent cluster reduce";
  EXPECT_THROW(source({128, 64, 64, 0, 0, 4, 1, 8, GemmFamily::wgmma, false, true}), InternalError)
      << "a cluster reduce of one split";
  EXPECT_THROW(source({128, 64, 64, 0, 0, 4, 9, 8, GemmFamily::wgmma, false, true}), InternalError)
      << "a cluster of 9 blocks (not portable)";
  EXPECT_THROW(source({64, 64, 64, 2, 2, 4, 4, 8, GemmFamily::mma_sync, false, true}), InternalError)
      << "mma_sync in a cluster";
}

TEST(GemmTemplateSource, SaysWhatItsConfigSays) {
  for (const GemmTemplateConfig& c : default_gemm_template_configs())
    for (bool trans_b : {false, true}) {
      const GemmTemplateSpec spec{DType::f16, trans_b, kBiasGelu, c};
      const std::string code = gemm_template_source("k", spec);
      auto has = [&](const std::string& s) { return code.find(s) != std::string::npos; };
      EXPECT_TRUE(has(fmt::format("#define STAGES {}\n", c.stages))) << gemm_config_name(c);
      EXPECT_TRUE(has(fmt::format("#define THREADS {}\n", c.threads())));
      EXPECT_TRUE(has(fmt::format("#define BM {}\n#define BN {}\n#define BK {}\n", c.bm, c.bn, c.bk)));
      EXPECT_TRUE(has(fmt::format("#define SPLIT_K {}\n", c.split_k)));
      EXPECT_TRUE(has(fmt::format("#define GROUP_M {}\n", c.group_m)));
      EXPECT_TRUE(has(fmt::format("#define TRANS_B {}\n", trans_b ? 1 : 0)));
      EXPECT_TRUE(has("#define KILN_PTX_TYPE \"f16\""));
      EXPECT_TRUE(has("mma.sync.aligned.m16n8k16.row.col.f32."));
      EXPECT_TRUE(has("cp.async.cg.shared.global"));
      EXPECT_TRUE(has("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
      EXPECT_TRUE(has("erff(x * 0.70710678118654752f)")) << "GELU in the erf form, fp32";
      EXPECT_FALSE(has("tanh")) << "no approximate GELU";
      EXPECT_LE(gemm_template_shared_bytes(spec), size_t{227} * 1024) << "past the H200's shared memory";
      EXPECT_EQ(kernels_starting_with_the_prologue(code, gemm_config_name(c)), 2) << "the kernel and its reduce";
    }
  EXPECT_EQ(gemm_config_name({128, 128, 32, 2, 4, 3, 1, 8}), "128x128x32_w2x4_s3_g8");
  EXPECT_EQ(gemm_config_name({64, 64, 64, 2, 2, 4, 4, 8}), "64x64x64_w2x2_s4_g8_k4");
  EXPECT_EQ(gemm_epilogue_name(kBare), "bare");
  EXPECT_EQ(gemm_epilogue_name(kBiasGeluResidual), "bias_gelu_residual");
  EXPECT_EQ(gemm_epilogue_name(GemmTemplateEpilogue{false, GemmActivation::relu, false}), "relu");
  // A [BK][BN + 8] or [BN][BK + 8] B tile beside the [BM][BK + 8] A tile, every stage.
  EXPECT_EQ(gemm_template_shared_bytes({DType::bf16, false, kBare, {128, 128, 32, 2, 4, 3, 1, 8}}),
            size_t{3} * (128 * 40 + 32 * 136) * 2);
  EXPECT_EQ(gemm_template_shared_bytes({DType::bf16, true, kBare, {128, 128, 32, 2, 4, 3, 1, 8}}),
            size_t{3} * (128 * 40 + 128 * 40) * 2);
}

TEST(GemmTemplateSource, ABadConfigIsAnInternalError) {
  auto source = [](GemmTemplateConfig c, DType t = DType::bf16) {
    return gemm_template_source("k", GemmTemplateSpec{t, false, {}, c});
  };
  EXPECT_THROW(source({128, 128, 32, 2, 4, 3, 1, 8}, DType::f32), InternalError);
  EXPECT_THROW(source({128, 120, 32, 2, 4, 3, 1, 8}), InternalError) << "BN not whole warp tiles";
  EXPECT_THROW(source({128, 128, 24, 2, 4, 3, 1, 8}), InternalError) << "BK not a multiple of 16";
  EXPECT_THROW(source({128, 128, 32, 2, 4, 5, 1, 8}), InternalError) << "5 stages";
  EXPECT_THROW(source({128, 128, 32, 2, 4, 1, 1, 8}), InternalError) << "1 stage";
  EXPECT_THROW(source({128, 128, 32, 2, 4, 3, 0, 8}), InternalError) << "split_k 0";
  EXPECT_THROW(source({128, 128, 32, 2, 4, 3, 1, 0}), InternalError) << "group_m 0";
}

// Large tiles where they fill the SMs, smaller ones where they do not, split-K for small M x N with long K.
TEST(GemmTemplateSource, ChoosesByTileCount) {
  const int sms = 132;  // H200
  EXPECT_EQ(choose_gemm_template_config(8192, 8192, 8192, sms).bn, 256);
  EXPECT_EQ(choose_gemm_template_config(1024, 3072, 768, sms).bm, 128);
  const GemmTemplateConfig small = choose_gemm_template_config(128, 768, 3072, sms);
  EXPECT_GT(small.split_k, 1) << gemm_config_name(small);
  EXPECT_EQ(choose_gemm_template_config(128, 768, 64, sms).split_k, 1) << "K too short to split";
  EXPECT_EQ(choose_gemm_template_config(1, 1, 1, sms).split_k, 1);
  const std::vector<GemmTemplateConfig> configs = default_gemm_template_configs();
  for (int64_t m : {1, 128, 1024})
    for (int64_t k : {1, 768, 4096}) {
      const GemmTemplateConfig c = choose_gemm_template_config(m, 768, k, sms);
      EXPECT_NE(std::find(configs.begin(), configs.end(), c), configs.end()) << gemm_config_name(c);
    }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
