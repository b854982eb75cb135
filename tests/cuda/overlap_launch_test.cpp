// Programmatic dependent launch (LaunchConfig::waits_for_prior_grids on a stream that overlaps launches):
// long chains of kernels, each reading what the one before wrote, give exact results when launched
// plainly and from a captured CUDA graph, at one block and at many. Needs a usable GPU (skips without).
#include <cmath>
#include <string>
#include <vector>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_objects.h"
#include "codegen/cuda/scalar_cuda.h"
#include "cuda_test_util.h"

namespace kiln::backend::cuda::testing {
namespace {

// y = x + 1, then a second pass over y's other end, so a kernel that started reading before its
// predecessor finished would see a stale element somewhere in the buffer.
std::string add_one_source() {
  return std::string(codegen::cuda::cuda_scalar_preamble()) + R"(
extern "C" __global__ void add_one(const float* x, float* y, long long n) {
  kiln_grid_prologue();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[n - 1 - i] = x[n - 1 - i] + 1.0f;
}
)";
}

void expect_all(const Stream& stream, const DeviceBuffer& buffer, long long n, float want, const std::string& what) {
  const size_t bytes = size_t(n) * sizeof(float);
  PinnedBuffer host(stream.context(), bytes);
  copy_to_host(stream, host, buffer, bytes);
  stream.synchronize();
  long long wrong = 0, first = -1;
  for (long long i = 0; i < n; ++i)
    if (host.as<float>()[size_t(i)] != want && wrong++ == 0) first = i;
  EXPECT_EQ(wrong, 0) << what << ": first wrong element " << first << " = "
                      << (first >= 0 ? host.as<float>()[size_t(first)] : 0.0f) << ", want " << want;
}

TEST_F(GpuTest, ChainsOfOverlappedLaunchesReadWhatTheKernelBeforeWrote) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context, /*overlap_launches=*/true);
  EXPECT_EQ(stream.overlaps_launches(), device.info().compute_major >= 9);
  Module module(context, compile_to_cubin(add_one_source(), "add_one.cu", device.info().arch()).cubin);
  Function add_one = module.function("add_one");
  constexpr int kChain = 300;  // even: the result ends in `a`
  for (long long n : {1LL, 1000LL, 3000017LL}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const size_t bytes = size_t(n) * sizeof(float);
    DeviceBuffer a(stream, bytes), b(stream, bytes);
    check(driver().cuMemsetD8Async(a.ptr(), 0, bytes, stream.handle()), "cuMemsetD8Async");
    const unsigned block = 256;
    const unsigned blocks = unsigned(std::min<long long>((n + block - 1) / block, 4096));
    LaunchConfig config{{blocks}, {block}};
    config.waits_for_prior_grids = true;
    auto chain = [&] {
      for (int i = 0; i < kChain; i += 2) {
        launch(stream, add_one, config, a.ptr(), b.ptr(), n);
        launch(stream, add_one, config, b.ptr(), a.ptr(), n);
      }
    };
    chain();
    expect_all(stream, a, n, float(kChain), "launched");

    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    check(driver().cuStreamBeginCapture(stream.handle(), CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
    chain();
    check(driver().cuStreamEndCapture(stream.handle(), &graph), "cuStreamEndCapture");
    check(driver().cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
    for (int replay = 0; replay < 3; ++replay) check(driver().cuGraphLaunch(exec, stream.handle()), "cuGraphLaunch");
    expect_all(stream, a, n, float(4 * kChain), "after three graph replays");
    driver().cuGraphExecDestroy(exec);
    driver().cuGraphDestroy(graph);
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
