// NVRTC: runs on any machine with the toolkit's library, GPU or not.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "backend/cuda/cubin_info.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"

namespace kiln::backend::cuda::testing {
namespace {

bool contains(const std::vector<std::string>& options, const std::string& option) {
  return std::find(options.begin(), options.end(), option) != options.end();
}

TEST_F(NvrtcTest, CompilesAKernelToAnElfCubin) {
  CompiledCubin compiled = compile_to_cubin(kAxpbSource, "axpb.cu", "sm_90a");
  ASSERT_GE(compiled.cubin.size(), 4u);
  EXPECT_EQ(std::memcmp(compiled.cubin.data(), "\x7f" "ELF", 4), 0) << "a cubin is an ELF image";
  std::string_view image(compiled.cubin.data(), compiled.cubin.size());
  EXPECT_NE(image.find("axpb"), std::string_view::npos) << "the kernel's extern \"C\" name is in its symbol table";
  EXPECT_TRUE(contains(compiled.options, "--gpu-architecture=sm_90a"));
  EXPECT_TRUE(contains(compiled.options, "-std=c++17"));
  EXPECT_TRUE(contains(compiled.options, "-default-device"));
  for (const std::string& option : compiled.options) EXPECT_EQ(option.find("fast_math"), std::string::npos) << option;
  std::cout << "NVRTC " << nvrtc().major << "." << nvrtc().minor << " (" << nvrtc().library << "): "
            << compiled.cubin.size() << "-byte cubin for sm_90a\n";
}

TEST_F(NvrtcTest, ASyntaxErrorIsAnInternalErrorCarryingTheLog) {
  const char* broken = "extern \"C\" __global__ void broken(float* y) {\n"
                       "  int i = threadIdx.x;\n"
                       "  y[i] = 1.0f\n"
                       "}\n";
  try {
    compile_to_cubin(broken, "broken_kernel.cu", "sm_90a");
    FAIL() << "a kernel with a syntax error compiled";
  } catch (const InternalError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("broken_kernel.cu(4): error: expected a \";\""), std::string::npos) << message;
    EXPECT_NE(message.find("does not compile for sm_90a"), std::string::npos) << message;
    EXPECT_NE(message.find("--gpu-architecture=sm_90a"), std::string::npos) << message;
  }
}

TEST_F(NvrtcTest, TimesATinyKernel) {
  const char* tiny = "extern \"C\" __global__ void tiny(float* y) { y[threadIdx.x] = 1.0f; }\n";
  compile_to_cubin(tiny, "warmup.cu", "sm_90a");  // the first compile also loads NVRTC's builtins
  CompiledCubin compiled = compile_to_cubin(tiny, "tiny.cu", "sm_90a");
  std::cout << "NVRTC compiled a tiny kernel for sm_90a in " << compiled.seconds * 1e3 << " ms\n";
  RecordProperty("tiny_kernel_compile_ms", std::to_string(compiled.seconds * 1e3));
}

// kiln compiles its generated kernels in parallel: NVRTC's first use and its programs are per thread.
TEST_F(NvrtcTest, CompilesOnSeveralThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<size_t> sizes(4, 0);
  std::vector<std::string> errors(sizes.size());
  for (size_t t = 0; t < sizes.size(); ++t) {
    threads.emplace_back([&sizes, &errors, t] {
      try {
        sizes[t] = compile_to_cubin(kAxpbSource, "axpb_" + std::to_string(t) + ".cu", "sm_90").cubin.size();
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < sizes.size(); ++t) {
    EXPECT_EQ(errors[t], "");
    EXPECT_GT(sizes[t], 0u);
  }
}

TEST_F(NvrtcTest, FastMathIsRefused) {
  for (const char* option :
       {"--use_fast_math", "-use_fast_math", "--ftz=true", "--prec-div=false", "--prec-sqrt=false"}) {
    EXPECT_THROW(nvrtc_options("sm_90", {option}), InternalError) << option;
  }
  EXPECT_NO_THROW(nvrtc_options("sm_90", {"-lineinfo"}));
}

TEST_F(NvrtcTest, AnArchitectureNvrtcLacksIsAUserErrorAndAMalformedOneAnInternalError) {
  try {
    compile_to_cubin(kAxpbSource, "axpb.cu", "sm_20");
    FAIL() << "compiled for sm_20";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot compile for sm_20"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compile_to_cubin(kAxpbSource, "axpb.cu", "compute_90"), InternalError);
  EXPECT_THROW(compile_to_cubin(kAxpbSource, "axpb.cu", "sm_9x"), InternalError);
}
// The registers and stack frame of each kernel, read from the cubin: the same numbers ptxas reports
// with -v (where NVRTC's log carries the report), a frame for a local array, none for a plain kernel;
// a device function the compiler kept out of line is not a kernel.
TEST_F(NvrtcTest, ReadsEachKernelsRegistersAndStackFrameFromTheCubin) {
  const std::string source = std::string(kAxpbSource) + R"(
extern "C" __global__ void divided(long long* a, long long b) { a[threadIdx.x] /= b; }  // calls a division routine
extern "C" __global__ void shuffled(float* out, const float* in, int n) {
  float local[64];
  for (int j = 0; j < 64; ++j) local[j] = in[(threadIdx.x + 7 * j) % n];
  float sum = 0;
  for (int j = 0; j < 64; ++j) sum += local[(13 * j + threadIdx.x) % 64] * local[j];
  out[threadIdx.x] = sum;
}
)";
  const CompiledCubin compiled = compile_to_cubin(source, "two.cu", "sm_90a", {"--ptxas-options=-v"});
  const auto kernels = cubin_kernels(compiled.cubin);
  ASSERT_EQ(kernels.size(), 3u) << "the kernels, not the 64-bit division routine";
  ASSERT_TRUE(kernels.count("axpb") && kernels.count("shuffled") && kernels.count("divided"));
  EXPECT_GT(kernels.at("divided").registers, 0);
  EXPECT_GT(kernels.at("axpb").registers, 0);
  EXPECT_EQ(kernels.at("axpb").frame_bytes, 0);
  EXPECT_GT(kernels.at("shuffled").registers, 0);
  EXPECT_GE(kernels.at("shuffled").frame_bytes, 256) << "64 floats indexed at run time live on the stack";
  // ptxas's report, when the log has one: "Function properties for NAME", then "N bytes stack frame",
  // then "Used N registers".
  std::istringstream log(compiled.log);
  std::string function;
  int reported = 0;
  for (std::string line; std::getline(log, line);) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex("Compiling entry function '([A-Za-z_]+)'"))) function = m[1];
    if (std::regex_search(line, m, std::regex("([0-9]+) bytes stack frame")) && kernels.count(function)) {
      EXPECT_EQ(kernels.at(function).frame_bytes, std::stoi(m[1])) << function;
    }
    if (std::regex_search(line, m, std::regex("Used ([0-9]+) registers")) && kernels.count(function)) {
      EXPECT_EQ(kernels.at(function).registers, std::stoi(m[1])) << function;
      ++reported;
    }
  }
  std::cout << "ptxas's report in NVRTC's log covered " << reported << " of 3 kernels\n";
}

TEST(CubinInfo, AnImageThatIsNotAnElfCubinIsAnInternalError) {
  const std::vector<char> junk = {'\x7f', 'E', 'L', 'F', 2, 1, 1, 0};
  EXPECT_THROW(cubin_kernels(junk), InternalError);
  EXPECT_THROW(cubin_kernels(std::vector<char>(64, 0)), InternalError);
}

// Runs everywhere: the candidates are names no machine has.
TEST(NvrtcLoader, AMissingLibraryIsAUserErrorNamingEachCandidate) {
  try {
    load_nvrtc({"libkiln-no-such-nvrtc.so.13", "/nonexistent/lib64/libnvrtc.so"});
    FAIL() << "loaded a library that does not exist";
  } catch (const UserError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("no NVRTC library"), std::string::npos) << message;
    EXPECT_NE(message.find("libkiln-no-such-nvrtc.so.13"), std::string::npos) << message;
    EXPECT_NE(message.find("/nonexistent/lib64/libnvrtc.so"), std::string::npos) << message;
  }
}

TEST(NvrtcLoader, TriesTheToolkitsMajorVersionFirst) {
  std::vector<std::string> candidates = nvrtc_library_candidates();
  ASSERT_GE(candidates.size(), 2u);
  EXPECT_EQ(candidates[0], "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000));
  EXPECT_EQ(candidates[1], "libnvrtc.so");
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
