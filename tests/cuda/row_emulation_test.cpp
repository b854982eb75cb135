// The generated CUDA row kernels run on the host: every case's source, with stand-ins for the CUDA names
// it uses, compiled as C++ by the host compiler into one shared object, each block's threads run as
// fibers (ucontext) switched at every barrier, so that __syncthreads and __shfl_xor_sync (emulated as
// exchanges between two barriers) behave as on a GPU, and a __syncthreads that not every thread of a
// block reaches, or a shuffle that not every lane of a warp reaches, is reported. This checks the block reduction, the grid-stride loop over rows, the index
// arithmetic and the semantics against the fp64 reference on machines without a GPU, and runs the GPU
// test's harness (row_cases.h) where that one skips. CUDA's math functions are stood in for by libm's,
// so the GPU test remains the check of those (the tolerances cover both).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "codegen/cpu/subprocess.h"
#include "codegen/cuda/emit_row_cuda.h"
#include "codegen/cuda/scalar_cuda.h"
#include "common/temp_dir.h"
#include "row_cases.h"

namespace kiln::backend::cuda::testing {
namespace {

using codegen::cuda::CudaRowSource;

constexpr const char* kHostShim = R"(// Host stand-ins for CUDA: a block's threads as fibers.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __restrict__ __restrict
#define __shared__ static  // blocks run one after the other: one copy serves each in turn
struct kiln_emulated_dim3 { unsigned x, y, z; };
static kiln_emulated_dim3 blockIdx, threadIdx, blockDim, gridDim;
static inline float __int_as_float(int b) { float f; memcpy(&f, &b, sizeof f); return f; }
static inline float __uint_as_float(unsigned b) { float f; memcpy(&f, &b, sizeof f); return f; }
static inline unsigned __float_as_uint(float f) { unsigned b; memcpy(&b, &f, sizeof b); return b; }
static inline double __longlong_as_double(long long b) { double d; memcpy(&d, &b, sizeof d); return d; }
static inline float __fmul_rn(float a, float b) { return a * b; }  // -ffp-contract=off: never an FMA
static inline double __dmul_rn(double a, double b) { return a * b; }

static ucontext_t kiln_emu_main, kiln_emu_fiber[1024];
static bool kiln_emu_finished[1024];
static unsigned kiln_emu_arrived, kiln_emu_arrived_in_warp[32];
static bool kiln_emu_block_barrier;  // some thread reached a __syncthreads in this sweep
static void (*kiln_emu_body)();
// A thread reaching a barrier hands control back to the scheduler, which sets threadIdx before resuming it.
static void kiln_emu_barrier() {
  ++kiln_emu_arrived;
  ++kiln_emu_arrived_in_warp[threadIdx.x / 32];
  swapcontext(&kiln_emu_fiber[threadIdx.x], &kiln_emu_main);
}
static void __syncthreads() { kiln_emu_block_barrier = true; kiln_emu_barrier(); }
template <class T> static T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  static T slot[1024];
  slot[threadIdx.x] = v;
  kiln_emu_barrier();
  const T r = slot[threadIdx.x ^ (unsigned)lane_mask];
  kiln_emu_barrier();
  return r;
}
static void kiln_emu_entry() { kiln_emu_body(); kiln_emu_finished[threadIdx.x] = true; }
// 0, or 1 when some threads of a block wait at a __syncthreads that others never reach, or some lanes of
// a warp at a shuffle that others never reach (warps may shuffle while other warps have finished).
static int kiln_emu_run(unsigned grid, unsigned block, void (*body)()) {
  const size_t stack = 256 * 1024;
  char* stacks = (char*)malloc(stack * block);
  kiln_emu_body = body;
  gridDim.x = grid;
  blockDim.x = block;
  int status = 0;
  for (unsigned b = 0; b < grid && status == 0; ++b) {
    blockIdx.x = b;
    for (unsigned t = 0; t < block; ++t) {
      getcontext(&kiln_emu_fiber[t]);
      kiln_emu_fiber[t].uc_stack.ss_sp = stacks + t * stack;
      kiln_emu_fiber[t].uc_stack.ss_size = stack;
      kiln_emu_fiber[t].uc_link = &kiln_emu_main;
      makecontext(&kiln_emu_fiber[t], kiln_emu_entry, 0);
      kiln_emu_finished[t] = false;
    }
    for (;;) {  // each sweep runs every thread to its next barrier (or its end)
      kiln_emu_arrived = 0;
      kiln_emu_block_barrier = false;
      memset(kiln_emu_arrived_in_warp, 0, sizeof kiln_emu_arrived_in_warp);
      unsigned done = 0;
      for (unsigned t = 0; t < block; ++t)
        if (!kiln_emu_finished[t]) { threadIdx.x = t; swapcontext(&kiln_emu_main, &kiln_emu_fiber[t]); }
      for (unsigned t = 0; t < block; ++t) done += kiln_emu_finished[t];
      if (done == block) break;
      if (kiln_emu_block_barrier && kiln_emu_arrived != block) { status = 1; break; }
      for (unsigned w = 0; w < block / 32; ++w)
        if (kiln_emu_arrived_in_warp[w] != 0 && kiln_emu_arrived_in_warp[w] != 32) status = 1;
      if (status) break;
    }
  }
  free(stacks);
  return status;
}
)";

// static void* const* params_<name>; the thunk calls the kernel with them; emulate_<name> runs the grid.
std::string emulation_entry(const loops::RowKernel& k, const CudaRowSource& src) {
  std::vector<std::string> args;
  size_t p = 0;
  for (const loops::TensorDesc& in : k.inputs)
    args.push_back(fmt::format("*(const {}* const*)p[{}]", codegen::cuda::cuda_storage_type(in.dtype), p++));
  args.push_back(fmt::format("*({}* const*)p[{}]", codegen::cuda::cuda_storage_type(k.output.dtype), p++));
  for (size_t j = 0; j < src.symbols.size() + 2; ++j) args.push_back(fmt::format("*(const long long*)p[{}]", p++));
  return fmt::format(
      "static void* const* kiln_emu_params_{0};\n"
      "static void kiln_emu_thunk_{0}() {{ void* const* p = kiln_emu_params_{0}; {0}({1}); }}\n"
      "extern \"C\" int emulate_{0}(void* const* p, unsigned grid, unsigned block) {{\n"
      "  kiln_emu_params_{0} = p;\n  return kiln_emu_run(grid, block, kiln_emu_thunk_{0});\n}}\n",
      src.name, fmt::join(args, ", "));
}

using EmulatedKernel = int(void* const* parameters, unsigned grid, unsigned block);

CudaRowSource emulated_source(const RowCase& c, const RowVariant& variant) {
  loops::RowKernel k = build_row_case(c).group.kernel;
  k.name = c.name + "_" + variant.label;
  return codegen::cuda::emit_row_cuda(k, variant.options);
}

// All kernels in one program, compiled once.
class CudaRowEmulation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string code = kHostShim;
    for (const RowCase& c : row_cases())
      for (const RowVariant& variant : row_variants()) {
        const CudaRowSource src = emulated_source(c, variant);
        loops::RowKernel k = build_row_case(c).group.kernel;
        code += src.code + emulation_entry(k, src);
      }
    const std::string source = (dir_.root() / "row_kernels.cpp").string();
    const std::string library = (dir_.root() / "row_kernels.so").string();
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
  test_common::TempDir dir_{"kiln-cuda-row-emulation"};
  void* handle_ = nullptr;
};

KernelRun run_on_host(EmulatedKernel* kernel, int threads, const std::vector<Tensor>& inputs,
                      const std::vector<int64_t>& symbols, int64_t rows, int64_t cols, DType dtype,
                      const std::vector<int64_t>& shape, int64_t blocks, bool* diverged) {
  KernelRun run{Tensor::empty(dtype, shape)};
  std::vector<unsigned char> output(run.output.nbytes() + kGuardBytes, kGuard);
  std::vector<const void*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(t.raw());
  void* out = output.data();
  std::vector<long long> sizes(symbols.begin(), symbols.end());
  sizes.push_back(rows);
  sizes.push_back(cols);
  std::vector<void*> parameters;
  for (const void*& p : pointers) parameters.push_back(&p);
  parameters.push_back(&out);
  for (long long& s : sizes) parameters.push_back(&s);
  if (blocks > 0 && kernel(parameters.data(), static_cast<unsigned>(blocks), static_cast<unsigned>(threads)) != 0)
    *diverged = true;
  std::memcpy(run.output.raw(), output.data(), run.output.nbytes());
  run.guard_intact =
      std::all_of(output.begin() + static_cast<ptrdiff_t>(run.output.nbytes()), output.end(), [](unsigned char b) {
        return b == kGuard;
      });
  return run;
}

TEST_F(CudaRowEmulation, EveryCaseMatchesTheFp64Reference) {
  for (const RowCase& c : row_cases()) {
    const BuiltRowCase built = build_row_case(c);
    for (const RowVariant& variant : row_variants()) {
      const CudaRowSource src = emulated_source(c, variant);
      const int threads = variant.options.threads_per_block;
      auto* kernel = reinterpret_cast<EmulatedKernel*>(::dlsym(handle_, ("emulate_" + src.name).c_str()));
      ASSERT_NE(kernel, nullptr) << src.name;
      // libm's exp / log stand in for CUDA's: their errors are within the bounds assumed for CUDA's.
      bool diverged = false;
      const RowReport report = run_row_case(
          c, built, src.launch, c.sizes,
          [&](const std::vector<Tensor>& inputs, const std::vector<int64_t>& symbols, int64_t rows, int64_t cols,
              DType dtype, const std::vector<int64_t>& shape, int64_t blocks) {
            return run_on_host(kernel, threads, inputs, symbols, rows, cols, dtype, shape, blocks, &diverged);
          });
      EXPECT_FALSE(diverged) << src.name << ": a barrier not every thread of a block (or lane of a warp) reached";
      for (const std::string& failure : report.failures) ADD_FAILURE() << failure;
      std::cout << src.name << " emulated on the host: " << report.summary() << "\n";
    }
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
