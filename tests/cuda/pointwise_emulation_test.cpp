// The generated CUDA kernels run on the host: every case's source, with stand-ins for the few CUDA
// names it uses (blockIdx, __fmul_rn, __int_as_float, ...), compiled as C++ by the host compiler into
// one shared object (so several kernels share one program, as the preamble's guard allows), and each
// grid run one thread at a time. This checks the text's index arithmetic, helpers and semantics against
// the fp64 reference on machines without a GPU; CUDA's own math functions are stood in for by libm's,
// so the GPU test (pointwise_cuda_test.cpp) remains the check of those. It also runs the GPU test's
// harness (inputs, reference, comparison) where that one skips.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "codegen/cpu/subprocess.h"
#include "codegen/cuda/emit_pointwise_cuda.h"
#include "codegen/cuda/scalar_cuda.h"
#include "common/temp_dir.h"
#include "pointwise_cases.h"

namespace kiln::backend::cuda::testing {
namespace {

using codegen::cuda::CudaSource;

constexpr const char* kHostShim = R"(// Host stand-ins for CUDA, one thread at a time.
#include <math.h>
#include <string.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __restrict__ __restrict
struct kiln_emulated_dim3 { unsigned x, y, z; };
static kiln_emulated_dim3 blockIdx, threadIdx, blockDim, gridDim;
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, sizeof f); return f; }
static inline float __uint_as_float(unsigned b) { float f; memcpy(&f, &b, sizeof f); return f; }
static inline unsigned __float_as_uint(float f) { unsigned b; memcpy(&b, &f, sizeof b); return b; }
static inline double __longlong_as_double(long long b) { double d; memcpy(&d, &b, sizeof d); return d; }
static inline float __fmul_rn(float a, float b) { return a * b; }  // -ffp-contract=off: never an FMA
static inline double __dmul_rn(double a, double b) { return a * b; }
)";

// extern "C" void emulate_<name>(void* const* parameters, unsigned grid, unsigned block): the grid,
// thread by thread; parameters[i] points at the i-th kernel argument.
std::string emulation_entry(const loops::PointwiseKernel& k, const CudaSource& src) {
  std::vector<std::string> args;
  size_t p = 0;
  for (const loops::TensorDesc& in : k.inputs)
    args.push_back(fmt::format("*(const {}* const*)p[{}]", codegen::cuda::cuda_storage_type(in.dtype), p++));
  args.push_back(fmt::format("*({}* const*)p[{}]", codegen::cuda::cuda_storage_type(k.output.dtype), p++));
  for (size_t j = 0; j <= src.symbols.size(); ++j) args.push_back(fmt::format("*(const long long*)p[{}]", p++));
  return fmt::format(
      "extern \"C\" void emulate_{0}(void* const* p, unsigned grid, unsigned block) {{\n"
      "  gridDim.x = grid; blockDim.x = block;\n"
      "  for (unsigned b = 0; b < grid; ++b)\n"
      "    for (unsigned t = 0; t < block; ++t) {{ blockIdx.x = b; threadIdx.x = t; {0}({1}); }}\n}}\n",
      src.name, fmt::join(args, ", "));
}

using EmulatedKernel = void(void* const* parameters, unsigned grid, unsigned block);

// All kernels in one program, compiled once (one test, so that ctest's process per test compiles once).
class CudaPointwiseEmulation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string code = kHostShim;
    for (const PointwiseCase& c : pointwise_cases()) {
      const BuiltCase built = build_case(c);
      const CudaSource src = codegen::cuda::emit_pointwise_cuda(built.group.kernel);
      code += src.code + emulation_entry(built.group.kernel, src);
    }
    const std::string source = (dir_.root() / "kernels.cpp").string();
    const std::string library = (dir_.root() / "kernels.so").string();
    std::ofstream(source, std::ios::binary) << code;
    const char* cxx = std::getenv("CXX");
    codegen::cpu::ProcessResult r = codegen::cpu::run_process({cxx && *cxx ? cxx : "g++", "-std=c++17", "-O1",
                                                               "-ffp-contract=off", "-fPIC", "-shared", "-w", source,
                                                               "-o", library});
    if (r.spawn_errno) GTEST_SKIP() << "SKIPPED: no host C++ compiler to emulate the kernels with: " << r.status_text();
    ASSERT_TRUE(r.ok()) << "the kernels do not compile as host C++: " << r.status_text() << "\n"
                        << r.output.substr(0, 8000);
    handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
  }
  void TearDown() override {
    if (handle_) ::dlclose(handle_);
  }
  test_common::TempDir dir_{"kiln-cuda-emulation"};
  void* handle_ = nullptr;
};

KernelRun run_on_host(EmulatedKernel* kernel, int threads_per_block, const std::vector<Tensor>& inputs,
                      const std::vector<int64_t>& symbols, DType dtype, const std::vector<int64_t>& shape,
                      int64_t blocks) {
  KernelRun run{Tensor::empty(dtype, shape)};
  std::vector<unsigned char> output(run.output.nbytes() + kGuardBytes, kGuard);
  std::vector<const void*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(t.raw());
  void* out = output.data();
  std::vector<long long> sizes(symbols.begin(), symbols.end());
  long long n = run.output.numel();
  std::vector<void*> parameters;
  for (const void*& p : pointers) parameters.push_back(&p);
  parameters.push_back(&out);
  for (long long& s : sizes) parameters.push_back(&s);
  parameters.push_back(&n);
  if (blocks > 0) kernel(parameters.data(), static_cast<unsigned>(blocks), static_cast<unsigned>(threads_per_block));
  std::memcpy(run.output.raw(), output.data(), run.output.nbytes());
  run.guard_intact =
      std::all_of(output.begin() + static_cast<ptrdiff_t>(run.output.nbytes()), output.end(), [](unsigned char b) {
        return b == kGuard;
      });
  return run;
}

TEST_F(CudaPointwiseEmulation, EveryCaseMatchesTheFp64Reference) {
  for (PointwiseCase c : pointwise_cases()) {
    const BuiltCase built = build_case(c);
    // libm's functions stand in for CUDA's, with bounds of their own (glibc's tanhf reaches 2.04 ulp):
    // 2 f32 ulps more wherever a math function is involved, which is 2 ulp of an f32 output and 2 * 2^-13
    // of a half one (pointwise_half_cases.cpp); correctly rounded operations keep their bound.
    const DType out = built.group.kernel.output.dtype;
    const bool half = is_half(out);
    const double one_rounding = half ? 0.5 + 0.5 * 0x1p-13 : 0.5;
    if (c.tolerance.kind == Tolerance::Kind::ulps && c.tolerance.ulps > one_rounding)
      c.tolerance.ulps += half ? 2 * 0x1p-13 : 2;
    const CudaSource src = codegen::cuda::emit_pointwise_cuda(built.group.kernel);
    auto* kernel = reinterpret_cast<EmulatedKernel*>(::dlsym(handle_, ("emulate_" + src.name).c_str()));
    ASSERT_NE(kernel, nullptr) << src.name;
    const CaseReport report = run_case(
        c, built, [&](int64_t n) { return src.launch.blocks(n); }, {1, 31, 4099},
        [&](const std::vector<Tensor>& inputs, const std::vector<int64_t>& symbols, DType dtype,
            const std::vector<int64_t>& shape, int64_t blocks) {
          return run_on_host(kernel, src.launch.threads_per_block, inputs, symbols, dtype, shape, blocks);
        });
    for (const std::string& failure : report.failures) ADD_FAILURE() << failure;
    std::cout << c.name << " emulated on the host: " << c.tolerance.why << "; " << report.summary() << "\n";
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
