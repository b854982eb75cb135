// The GEMM template route of a library product: candidates built when first needed, the choice measured
// once per row count (see cuda_gemm_route.h).
#include "backend/cuda/cuda_gemm_route.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_hopper.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/device_ops.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

std::atomic<uint64_t> launches{0};
std::atomic<uint64_t> kernels_built{0};

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
uint64_t gemm_template_route_kernels_built() { return kernels_built.load(); }

GemmTemplateRoute::GemmTemplateRoute(const CudaRuntime& runtime, std::string what, const Options& options)
    : runtime_(runtime), what_(std::move(what)), options_(options),
      modules_(std::make_unique<ModuleCache>(runtime, options)) {}
GemmTemplateRoute::~GemmTemplateRoute() = default;

std::unique_ptr<GemmTemplateRoute> GemmTemplateRoute::make(const CudaRuntime& runtime, const std::string& what,
                                                           DType dtype, int64_t k, int64_t n, bool trans_b,
                                                           const std::vector<float>& bias,
                                                           GemmTemplateEpilogue epilogue, const Options& options,
                                                           const RowNormFold* fold) {
  if (options.cuda_gemm_templates == "off" || compile_arch(runtime.info()) != "sm_90a") return nullptr;
  if (dtype != DType::bf16 && dtype != DType::f16) return nullptr;
  if (k % 8 != 0 || k == 0 || n == 0) return nullptr;
  auto route = std::make_unique<GemmTemplateRoute>(runtime, what, options);
  route->dtype_ = dtype;
  route->n_ = n;
  route->k_ = k;
  route->trans_b_ = trans_b;
  route->library_allowed_ = options.cuda_gemm_templates != "on";
  route->debug_ = options.debug_on("route");
  epilogue.bias = !bias.empty();
  if (epilogue.bias) route->bias_ = runtime.upload(Tensor::from_vector<float>(DType::f32, {n}, bias));
  epilogue.row_norm = fold != nullptr;
  if (fold) {
    KILN_INTERNAL_CHECK(fold->weight_nk.shape() == std::vector<int64_t>({n, k}) && fold->weight_nk.dtype() == dtype &&
                            fold->colsum.size() == size_t(n) && fold->gamma.size() == size_t(k) &&
                            fold->beta.size() == size_t(k),
                        "{}: a LayerNorm fold of other sizes", what);
    route->folded_ = true;
    route->trans_b_ = false;  // its weight is the fold's own [N,K] copy, made here
    route->weight_nk_ = runtime.upload(fold->weight_nk);
    route->colsum_ = runtime.upload(Tensor::from_vector<float>(DType::f32, {n}, fold->colsum));
    route->gamma_ = runtime.upload(Tensor::from_vector<float>(DType::f32, {k}, fold->gamma));
    route->beta_ = runtime.upload(Tensor::from_vector<float>(DType::f32, {k}, fold->beta));
    route->eps_ = fold->eps;
  }
  // The configs whose shared memory this device gives (the template reads B K-major: [N,K]).
  const size_t limit = static_cast<size_t>(max_shared_optin(runtime.context()));
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) {
    if (epilogue.row_norm && c.split_k > 1) continue;  // a row's statistics need all of K in one block
    const GemmTemplateSpec spec{dtype, true, epilogue, c};
    if (gemm_template_shared_bytes(spec) <= limit) route->specs_.push_back(spec);
  }
  if (route->specs_.empty()) return nullptr;
  route->kernels_.resize(route->specs_.size());
  return route;
}

const GemmTemplateKernel& GemmTemplateRoute::kernel(size_t i) const {
  std::lock_guard lock(mutex_);
  if (!kernels_.at(i)) {
    kernels_[i] = std::make_unique<GemmTemplateKernel>(specs_[i], runtime_.context(), *modules_);
    ++kernels_built;
  }
  return *kernels_[i];
}

void GemmTemplateRoute::build_all() const {
  std::lock_guard lock(mutex_);
  std::vector<CudaUnit> units;
  for (size_t i = 0; i < specs_.size(); ++i)
    if (!kernels_[i]) units.push_back(gemm_template_unit(specs_[i]));
  if (units.empty()) return;
  // One batch: NVRTC compiles what the cache lacks in parallel.
  const CubinBatch batch = compile_cubins(units, compile_arch(runtime_.info()), options_);
  for (size_t u = 0; u < units.size(); ++u) modules_->add(units[u].name, batch.cubins[u]);
  for (size_t i = 0; i < specs_.size(); ++i)
    if (!kernels_[i]) {
      kernels_[i] = std::make_unique<GemmTemplateKernel>(specs_[i], runtime_.context(), *modules_);
      ++kernels_built;
    }
}

CUdeviceptr GemmTemplateRoute::weight_nk(CUdeviceptr b) const {
  if (trans_b_) return b;  // already [N,K]
  std::lock_guard lock(mutex_);
  if (!weight_nk_.raw()) {
    // A graph would copy it again on every replay (and free it with the graph's memory).
    KILN_INTERNAL_CHECK(!runtime_.capturing(), "{}: B's [N,K] copy made inside a CUDA-graph capture", what_);
    weight_nk_ = runtime_.empty(dtype_, {n_, k_});
    const int64_t shape[] = {n_, k_}, strides[] = {1, n_};  // out[c, r] = B[r, c]
    runtime_.device_ops().strided_copy(runtime_.cuda_stream(), b, device_ptr(weight_nk_), shape, strides, 0,
                                       static_cast<int>(dtype_size(dtype_)));
  }
  return device_ptr(weight_nk_);
}

GemmTemplateArgs GemmTemplateRoute::args(int64_t m, CUdeviceptr a, CUdeviceptr b_nk, CUdeviceptr residual,
                                         CUdeviceptr out, CUdeviceptr y) const {
  GemmTemplateArgs x;
  x.a = a, x.b = b_nk, x.c = out, x.bias = bias_.raw() ? device_ptr(bias_) : 0, x.residual = residual;
  x.m = m, x.n = n_, x.k = k_, x.lda = k_, x.ldb = k_, x.ldc = n_, x.ldr = n_;
  if (folded_) {
    x.norm_colsum = device_ptr(colsum_), x.norm_gamma = device_ptr(gamma_), x.norm_beta = device_ptr(beta_);
    x.norm_y = y, x.ldy = k_, x.norm_eps = eps_;
  }
  return x;
}

void GemmTemplateRoute::run(int choice, int64_t m, CUdeviceptr a, CUdeviceptr b, CUdeviceptr residual,
                            CUdeviceptr out, CUdeviceptr y) const {
  const GemmTemplateKernel& kernel = this->kernel(size_t(choice));
  GemmTemplateArgs x = args(m, a, weight_nk(b), residual, out, y);
  x.workspace_bytes = kernel.workspace_bytes(m, n_);
  // Stream-ordered: freed after the product that reads it (inside a capture: the graph's own).
  const Tensor workspace =
      x.workspace_bytes ? runtime_.empty(DType::u8, {static_cast<int64_t>(x.workspace_bytes)}) : Tensor();
  if (x.workspace_bytes) x.workspace = device_ptr(workspace);
  kernel.launch(runtime_.cuda_stream(), x);
  ++launches;
}

int GemmTemplateRoute::choose(int64_t m, CUdeviceptr a, CUdeviceptr b, CUdeviceptr residual,
                              const std::function<void(CUdeviceptr out)>& library) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = choices_.find(m); it != choices_.end()) return it->second;
  }
  // Whether a config takes the operands: the alignment of A, B's copy (256-byte aligned) and the residual.
  const CUdeviceptr b_nk_alignment = trans_b_ ? b : 256;
  auto accepts = [&](size_t i) { return gemm_template_accepts(specs_[i], args(m, a, b_nk_alignment, residual, 0)); };
  // The library (with `on`, the first template that takes the operands).
  auto fallback = [&] {
    if (library_allowed_) return -1;
    for (size_t i = 0; i < specs_.size(); ++i)
      if (accepts(i)) return int(i);
    internal_error("{}: no GEMM template takes these operands", what_);
  };
  // Inside a capture nothing can be timed, built or copied: a template already built (with B's copy where
  // it needs one) under `on`, else the library for now; a later uncaptured run measures.
  if (runtime_.capturing()) {
    const int f = fallback();
    std::lock_guard lock(mutex_);
    const bool ready = f >= 0 && kernels_[size_t(f)] && (trans_b_ || weight_nk_.raw());
    return ready ? f : -1;
  }
  // Keyed by the candidates too (the choice is an index into them) and by whether the library may win.
  std::string configs;
  for (const GemmTemplateSpec& spec : specs_) configs += gemm_config_name(spec.config) + " ";
  bool stored = false;
  const int choice = runtime_.measured_choice(
      fmt::format("gemm template {} {}x{}x{} {} {} {}", dtype_name(dtype_), m, n_, k_,
                  gemm_epilogue_name(specs_.front().epilogue), library_allowed_ ? "auto" : "on",
                  content_name("configs", configs)),
      [&] { return measure(m, a, b, residual, library); },
      [&](int c) { return c == -1 ? library_allowed_ || folded_ : c >= 0 && c < int(specs_.size()) && accepts(size_t(c)); },
      fallback(), &stored);
  if (stored && debug_)
    std::fprintf(stderr, "route: %s, %lld rows: %s (from the tuning store)\n", what_.c_str(), static_cast<long long>(m),
                 choice < 0 ? "cuBLASLt" : ("GEMM template " + gemm_config_name(specs_[size_t(choice)].config)).c_str());
  std::lock_guard lock(mutex_);
  return choices_.emplace(m, choice).first->second;
}

// Each candidate once into a scratch output (the real one may be the residual itself, which repeated
// runs would accumulate into), checked against the library's result, then timed as a model's graph runs
// it: the weight not in L2 (a model's weights pass through L2 once a run), so before each of kTimed runs a
// buffer larger than L2 is overwritten (which also keeps the device busy while the host enqueues, so
// that host work between the two events is not timed).
int GemmTemplateRoute::measure(int64_t m, CUdeviceptr a, CUdeviceptr b, CUdeviceptr residual,
                               const std::function<void(CUdeviceptr out)>& library) const {
  build_all();
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
  const CUdeviceptr b_nk = weight_nk(b);
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (!kernel(i).accepts(args(m, a, b_nk, residual, out))) continue;
    run(int(i), m, a, b, residual, out);
    if (!agrees(dtype_, runtime_.download(scratch), reference)) {
      // Never chosen; with `on` the library's answer is only a check, except for a fold, whose error grows
      // with a row's |mean| / std: there the unfolded path stays the answer.
      if (library_allowed_ || folded_) continue;
      internal_error("{}: the GEMM template {} disagrees with cuBLASLt", what_, gemm_config_name(specs_[i].config));
    }
    const double ms = time_ms([&] { run(int(i), m, a, b, residual, out); });
    if (best_ms == 0 || ms < best_ms) best = int(i), best_ms = ms;
  }
  if (best < 0 && !library_allowed_ && !folded_) internal_error("{}: no GEMM template takes these operands", what_);
  if (debug_)
    std::fprintf(stderr, "route: %s, %lld rows: %s (%.2f us; %s %s)\n", what_.c_str(), (long long)m,
                 best < 0 ? "cuBLASLt" : ("GEMM template " + gemm_config_name(specs_[size_t(best)].config)).c_str(),
                 best_ms * 1e3, folded_ ? "the LayerNorm kernel, then cuBLASLt with its epilogue" : "cuBLASLt with its epilogue",
                 library_allowed_ ? fmt::format("{:.2f} us", library_ms * 1e3).c_str() : "not timed");
  return best;
}

}  // namespace kiln::backend::cuda
