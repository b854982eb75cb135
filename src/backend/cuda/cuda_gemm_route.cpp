// The GEMM template route of a library product: candidates built once, the choice measured once per
// row count (see cuda_gemm_route.h).
#include "backend/cuda/cuda_gemm_route.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_kernels.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

std::atomic<uint64_t> launches{0};

float widen(DType t, uint16_t w) { return t == DType::bf16 ? bf16_to_float(w) : half_to_float(w); }

// Whether a template's output agrees with the library's: NaN where it has NaN, the same infinities, and
// finite values within a few roundings of the output type (the library rounds its bias and its product
// before the epilogue kernel; the template rounds once).
bool agrees(DType t, const Tensor& got, const Tensor& want) {
  const double eps = t == DType::bf16 ? 0x1p-8 : 0x1p-11;
  const auto* g = got.data<uint16_t>();
  const auto* w = want.data<uint16_t>();
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double x = widen(t, g[i]), y = widen(t, w[i]);
    if (std::isnan(y) ? !std::isnan(x) : std::isinf(y) ? x != y : !(std::fabs(x - y) <= 4 * eps * (std::fabs(y) + 1)))
      return false;
  }
  return true;
}

}  // namespace

uint64_t gemm_template_route_launches() { return launches.load(); }

std::unique_ptr<GemmTemplateRoute> GemmTemplateRoute::make(const CudaRuntime& runtime, const std::string& what,
                                                           DType dtype, const Tensor& weight, bool trans_b,
                                                           const std::vector<float>& bias,
                                                           GemmTemplateEpilogue epilogue, const Options& options,
                                                           ModuleCache& modules) {
  if (options.cuda_gemm_templates == "off" || compile_arch(runtime.info()) != "sm_90a") return nullptr;
  if ((dtype != DType::bf16 && dtype != DType::f16) || weight.dtype() != dtype || weight.rank() != 2) return nullptr;
  const int64_t k = weight.dim(trans_b ? 1 : 0), n = weight.dim(trans_b ? 0 : 1);
  if (k % 8 != 0 || k == 0 || n == 0) return nullptr;
  auto route = std::make_unique<GemmTemplateRoute>(runtime, what);
  route->dtype_ = dtype;
  route->n_ = n;
  route->k_ = k;
  route->library_allowed_ = options.cuda_gemm_templates != "on";
  route->debug_ = options.debug_on("route");
  // The template reads B K-major: a [K,N] weight is transposed once, here.
  Tensor nk = Tensor::empty(dtype, {n, k});
  const auto* src = weight.data<uint16_t>();
  auto* dst = nk.data<uint16_t>();
  if (trans_b) std::memcpy(dst, src, nk.nbytes());
  else
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c) dst[c * k + r] = src[r * n + c];
  route->weight_nk_ = runtime.upload(nk);
  epilogue.bias = !bias.empty();
  if (epilogue.bias) route->bias_ = runtime.upload(Tensor::from_vector<float>(DType::f32, {n}, bias));
  // Every config, compiled in one parallel batch (or loaded from the cache).
  std::vector<GemmTemplateSpec> specs;
  std::vector<CudaUnit> units;
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) {
    specs.push_back({dtype, true, epilogue, c});
    units.push_back(gemm_template_unit(specs.back()));
  }
  const CubinBatch batch = compile_cubins(units, compile_arch(runtime.info()), options);
  for (size_t i = 0; i < units.size(); ++i) modules.add(units[i].name, batch.cubins[i]);
  for (const GemmTemplateSpec& s : specs) {
    try {
      route->kernels_.push_back(std::make_unique<GemmTemplateKernel>(s, runtime.context(), modules));
    } catch (const UserError&) {
      // A config whose shared memory this device does not give: the others remain.
    }
  }
  if (route->kernels_.empty()) return nullptr;
  return route;
}

GemmTemplateArgs GemmTemplateRoute::args(int64_t m, CUdeviceptr a, CUdeviceptr residual, CUdeviceptr out) const {
  GemmTemplateArgs x;
  x.a = a, x.b = device_ptr(weight_nk_), x.c = out, x.bias = bias_.raw() ? device_ptr(bias_) : 0, x.residual = residual;
  x.m = m, x.n = n_, x.k = k_, x.lda = k_, x.ldb = k_, x.ldc = n_, x.ldr = n_;
  return x;
}

void GemmTemplateRoute::run(int choice, int64_t m, CUdeviceptr a, CUdeviceptr residual, CUdeviceptr out) const {
  const GemmTemplateKernel& kernel = *kernels_.at(size_t(choice));
  GemmTemplateArgs x = args(m, a, residual, out);
  x.workspace_bytes = kernel.workspace_bytes(m, n_);
  // Stream-ordered: freed after the product that reads it (inside a capture: the graph's own).
  const Tensor workspace =
      x.workspace_bytes ? runtime_.empty(DType::u8, {static_cast<int64_t>(x.workspace_bytes)}) : Tensor();
  if (x.workspace_bytes) x.workspace = device_ptr(workspace);
  kernel.launch(runtime_.cuda_stream(), x);
  ++launches;
}

int GemmTemplateRoute::choose(int64_t m, CUdeviceptr a, CUdeviceptr residual,
                              const std::function<void(CUdeviceptr out)>& library) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = choices_.find(m); it != choices_.end()) return it->second;
  }
  // The library (with `on`, the first template that takes the operands).
  auto fallback = [&] {
    if (library_allowed_) return -1;
    for (size_t i = 0; i < kernels_.size(); ++i)
      if (kernels_[i]->accepts(args(m, a, residual, 0))) return int(i);
    internal_error("{}: no GEMM template takes these operands", what_);
  };
  // Inside a capture nothing can be timed: the fallback for now, measured on a later run.
  if (runtime_.capturing()) return fallback();
  // Keyed by the candidates too (the choice is an index into them) and by whether the library may win.
  std::string configs;
  for (const auto& kernel : kernels_) configs += gemm_config_name(kernel->spec().config) + " ";
  bool stored = false;
  const int choice = runtime_.measured_choice(
      fmt::format("gemm template {} {}x{}x{} {} {} {}", dtype_name(dtype_), m, n_, k_,
                  gemm_epilogue_name(kernels_.front()->spec().epilogue), library_allowed_ ? "auto" : "on",
                  content_name("configs", configs)),
      [&] { return measure(m, a, residual, library); },
      [&](int c) {
        return c == -1 ? library_allowed_
                       : c >= 0 && c < int(kernels_.size()) && kernels_[size_t(c)]->accepts(args(m, a, residual, 0));
      },
      fallback(), &stored);
  if (stored && debug_)
    std::fprintf(stderr, "route: %s, %lld rows: %s (from the tuning store)\n", what_.c_str(), static_cast<long long>(m),
                 choice < 0 ? "cuBLASLt" : ("GEMM template " + gemm_config_name(kernels_[size_t(choice)]->spec().config)).c_str());
  std::lock_guard lock(mutex_);
  return choices_.emplace(m, choice).first->second;
}

// Each candidate once into a scratch output (the real one may be the residual itself, which repeated
// runs would accumulate into), checked against the library's result, then timed as a model's graph runs
// it: the weight not in L2 (a model's weights pass through L2 once a run), so before each of kTimed runs a
// buffer larger than L2 is overwritten (which also keeps the device busy while the host enqueues, so
// that host work between the two events is not timed).
int GemmTemplateRoute::measure(int64_t m, CUdeviceptr a, CUdeviceptr residual,
                               const std::function<void(CUdeviceptr out)>& library) const {
  constexpr int kTimed = 7;
  constexpr int64_t kFlushBytes = int64_t{256} << 20;
  const Tensor scratch = runtime_.empty(dtype_, {m, n_});
  const Tensor flush = runtime_.empty(DType::u8, {kFlushBytes});
  const CUdeviceptr out = device_ptr(scratch);
  auto time_ms = [&](const std::function<void()>& once) {
    std::vector<std::unique_ptr<DeviceRuntime::Mark>> marks;
    for (int r = 0; r < kTimed; ++r) {
      check(driver().cuMemsetD8Async(device_ptr(flush), uint8_t(r), size_t(kFlushBytes), runtime_.cuda_stream().handle()),
            "cuMemsetD8Async");
      marks.push_back(runtime_.mark());
      once();
      marks.push_back(runtime_.mark());
    }
    runtime_.synchronize();
    std::vector<double> ms;
    for (int r = 0; r < kTimed; ++r) ms.push_back(runtime_.elapsed_ms(*marks[size_t(2 * r)], *marks[size_t(2 * r + 1)]));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  library(out);
  const Tensor reference = runtime_.download(scratch);
  int best = -1;
  const double library_ms = library_allowed_ ? time_ms([&] { library(out); }) : 0;
  double best_ms = library_ms;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    if (!kernels_[i]->accepts(args(m, a, residual, out))) continue;
    run(int(i), m, a, residual, out);
    if (!agrees(dtype_, runtime_.download(scratch), reference)) {
      if (library_allowed_) continue;  // never chosen; with `on` the library's answer is only a check
      internal_error("{}: the GEMM template {} disagrees with cuBLASLt", what_,
                     gemm_config_name(kernels_[i]->spec().config));
    }
    const double ms = time_ms([&] { run(int(i), m, a, residual, out); });
    if (best_ms == 0 || ms < best_ms) best = int(i), best_ms = ms;
  }
  if (best < 0 && !library_allowed_) internal_error("{}: no GEMM template takes these operands", what_);
  if (debug_)
    std::fprintf(stderr, "route: %s, %lld rows: %s (%.2f us; cuBLASLt with its epilogue %s)\n", what_.c_str(),
                 (long long)m, best < 0 ? "cuBLASLt" : ("GEMM template " + gemm_config_name(kernels_[size_t(best)]->spec().config)).c_str(),
                 best_ms * 1e3, library_allowed_ ? fmt::format("{:.2f} us", library_ms * 1e3).c_str() : "not timed");
  return best;
}

}  // namespace kiln::backend::cuda
