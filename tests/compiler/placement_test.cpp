// Constants and buffers as a backend places them: the executor reads the constants a backend's
// place_constant returned (a device backend uploads its weights there once), and wraps planned
// buffers on its runtime's device.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "compiler/compile.h"
#include "ir/parser.h"
#include "kiln/errors.h"
#include "runtime/executor.h"

namespace kiln {
namespace {

// The CPU backend, except that every constant it is given is placed as twice its value.
class DoublingBackend final : public backend::Backend {
 public:
  std::string name() const override { return "doubling"; }
  std::string device_key(const Options& o) const override { return cpu_.device_key(o); }
  backend::Fusions fusions(const Options& o) const override { return cpu_.fusions(o); }
  schedule::RoutingThresholds routing_thresholds(const Options& o) const override { return cpu_.routing_thresholds(o); }
  bool tunes_gemm(const Graph& g, const schedule::LibraryGroup& grp, const Options& o) const override {
    return cpu_.tunes_gemm(g, grp, o);
  }
  std::unique_ptr<backend::BackendCompile> start_compile(const Options& o) const override {
    return std::make_unique<Compile>(cpu_.start_compile(o), placed_);
  }
  const backend::DeviceRuntime& runtime() const override { return cpu_.runtime(); }
  int placed() const { return placed_; }

 private:
  class Compile final : public backend::BackendCompile {
   public:
    Compile(std::unique_ptr<backend::BackendCompile> cpu, int& placed) : cpu_(std::move(cpu)), placed_(placed) {}
    std::unique_ptr<backend::Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& grp) override {
      return cpu_->library_kernel(g, grp);
    }
    std::vector<std::unique_ptr<backend::Kernel>> generated_kernels(
        const Graph& g, const std::vector<backend::GeneratedGroup>& groups) override {
      return cpu_->generated_kernels(g, groups);
    }
    std::unique_ptr<backend::Kernel> node_kernel(const Graph& g, const Node& n) override { return cpu_->node_kernel(g, n); }
    std::shared_ptr<const Tensor> place_constant(std::shared_ptr<const Tensor> c) override {
      ++placed_;
      Tensor t = c->clone();
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 2;
      return std::make_shared<const Tensor>(std::move(t));
    }
    backend::TuningStats finish() override { return cpu_->finish(); }

   private:
    std::unique_ptr<backend::BackendCompile> cpu_;
    int& placed_;
  };

  backend::cpu::CpuBackend cpu_;
  mutable int placed_ = 0;
};

TEST(Placement, StepsReadTheConstantsTheBackendPlaced) {
  DoublingBackend backend;
  Options options;
  compiler::Executable exe = compiler::compile(parse_graph(R"(graph g(%x: f32[3]) -> (%y) {
  const %c: f32[3] = [1, 2, 3]
  %y = Add(%x, %c)
}
)"),
                                               backend, options, Mode::eager);
  EXPECT_EQ(backend.placed(), 1);
  runtime::ArenaPool arenas;
  Tensor x = Tensor::from_vector<float>(DType::f32, {3}, {10, 20, 30});
  Tensor y = runtime::execute(exe, arenas, {{"x", x}}, options, nullptr).at("y");
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 3), (std::vector<float>{12, 24, 36}));
}

TEST(Placement, ATensorKnowsItsDeviceAndHostReadsOfADeviceTensorAreRefused) {
  EXPECT_TRUE(Tensor::empty(DType::f32, {2}).device().is_host());
  EXPECT_EQ(device_string(Device{}), "host");
  float storage[2] = {1, 2};
  Tensor on_gpu = Tensor::wrap(DType::f32, {2}, nullptr, storage, Device{Device::Kind::cuda, 1});
  EXPECT_EQ(device_string(on_gpu.device()), "cuda:1");
  EXPECT_EQ(on_gpu.reshaped({1, 2}).device(), on_gpu.device());
  EXPECT_THROW(on_gpu.clone(), InternalError);
  EXPECT_THROW(on_gpu.as_double(0), InternalError);
}

}  // namespace
}  // namespace kiln
