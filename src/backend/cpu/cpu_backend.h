// The CPU backend: generated C++ kernels (codegen/cpu, compiled with the system compiler and cached on
// disk), library calls (oneDNN with post-ops; GEMM groups tuned against kiln's templates and OpenBLAS)
// and the eager kernels of src/ops for everything else. The reference flavour runs every node on the
// eager kernels' fp64 reference loops (the compiler widens the graph to f64 first).
#pragma once
#include "backend/backend.h"
#include "codegen/cpu/emit_pointwise.h"
#include "schedule/fusion_target.h"

namespace kiln::backend::cpu {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(bool reference = false);
  ~CpuBackend() override;
  std::string name() const override { return reference_ ? "cpu-reference" : "cpu"; }
  std::string device_key(const Options& options) const override;
  Fusions fusions(const Options& options) const override;
  schedule::RoutingThresholds routing_thresholds(const Options& options) const override;
  bool tunes_gemm(const Graph& g, const schedule::LibraryGroup& group, const Options& options) const override;
  std::unique_ptr<BackendCompile> start_compile(const Options& options) const override;
  const DeviceRuntime& runtime() const override;

 private:
  bool reference_;
  std::unique_ptr<DeviceRuntime> runtime_;
};

// The C++ source of a row or pointwise group's kernel, named by its content (what the backend compiles).
codegen::cpu::PointwiseSource emit_generated(const GeneratedGroup& group);

// What the fusion passes get on this backend (the compiler's route_softmax pass builds the same): the
// routes on this device's thresholds, and worth_tuning as the GEMM rule. For tests and tools that run
// a fusion pass on its own.
schedule::FusionTarget fusion_target(const Graph& g, const Options& options);

}  // namespace kiln::backend::cpu
