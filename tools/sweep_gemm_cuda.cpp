// kiln sweep gemm --device cuda: each GEMM choice for bf16 C = A B^T (B [N,K], Linear's layout), bare
// and with bias + GELU (erf), timed in CUDA-graph replay (the launch overhead a model's replayed graph
// pays, which decides at M = 128):
//   template:<config>          kiln's tensor-core template (backend/cuda/cuda_gemm_template.h), every
//                              default config (and on sm_90a every wgmma config, "wg..."), the epilogue
//                              fused into its store;
//   cublaslt                   cuBLASLt bare, the fastest of its heuristic's algorithms;
//   cublaslt+bias              cuBLASLt with its bias epilogue (no GELU: cuBLASLt's is the tanh form);
//   cublaslt+bias+gelu_pass    that, then the erf GELU as a separate kernel (what kiln runs today);
//   template+bias_gelu_pass:<config>  the heuristic's config bare, then bias + GELU as that pass: the
//                              same product as its fused twin, so the pair measures what fusing saves.
// On sm_90a also LayerNorm(A) B^T + bias ("ln+bias", A's rows standardised; BERT's Q/K/V and FFN1):
//   template:<config>          the wgmma kernel with row_norm (the LayerNorm folded in, y written too);
//   ln_pass+cublaslt+bias      a warp-per-row LayerNorm kernel writing y (as kiln's row kernels do), then
//                              cuBLASLt with its bias on y: the unfolded pair.
// Each candidate is checked against an fp64 product of sampled rows before it is timed; one that fails
// is reported and not timed. A graph holds enough launches for about 2 ms; the median of 10 replays.
#include "tools/sweep_gemm_cuda.h"

#include <cstdio>

#include "support/error.h"

#ifdef KILN_HAVE_CUDA
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/cuda/cublaslt.h"
#include "backend/cuda/cuda_gemm_template.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_runtime.h"
#include "codegen/cuda/emit_row_cuda.h"
#include "codegen/cuda/scalar_cuda.h"
#include "kiln/tensor.h"
#include "runtime/backends.h"
#include "tools/commands.h"
#include "tools/gemm_shape.h"

namespace kiln::tools {
namespace {

using namespace backend::cuda;
using nlohmann::json;

using Shape = GemmShape;

std::vector<Shape> parse_shapes(const std::vector<std::string>& texts) {
  std::vector<Shape> shapes;
  for (const std::string& t : texts) shapes.push_back(parse_gemm_shape(t));
  if (shapes.empty()) {
    for (int64_t m : {128, 1024})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 768}, {3072, 768}, {768, 3072}, {4096, 4096}})
        shapes.push_back({m, n, k});
    shapes.push_back({8192, 8192, 8192});
  }
  return shapes;
}

// The erf GELU in place over a [total / cols, cols] bf16 matrix, after adding a bf16 bias per column
// when one is given: the separate epilogue pass. And a LayerNorm pass (without gamma and beta): a warp a
// row of a [rows, cols] bf16 matrix, fp32 statistics.
std::string gelu_pass_source(const std::string& name) {
  return std::string(codegen::cuda::cuda_scalar_preamble()) + fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) {}(unsigned short* y, const unsigned short* bias, long long total,
                                                    long long cols) {{
  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < total; i += (long long)gridDim.x * 256) {{
    float x = kiln_bf16_to_f32(y[i]);
    if (bias) x += kiln_bf16_to_f32(bias[i % cols]);
    y[i] = kiln_f32_to_bf16(0.5f * x * (1.0f + erff(x * 0.70710678118654752f)));
  }}
}}
)", name);
}

std::string layernorm_pass_source(const std::string& name) {
  return std::string(codegen::cuda::cuda_scalar_preamble()) + std::string(codegen::cuda::cuda_row_preamble()) +
         fmt::format(R"(
extern "C" __global__ void __launch_bounds__(256) {}(const unsigned short* x, unsigned short* y, long long rows,
                                                    long long cols, float eps) {{
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const unsigned short* xr = x + row * cols;
  float s = 0.0f;
  for (long long c = lane; c < cols; c += 32) s += kiln_bf16_to_f32(xr[c]);
  const float mean = kiln_warp_reduce<kiln_sum_op>(s) / (float)cols;
  float v = 0.0f;
  for (long long c = lane; c < cols; c += 32) {{
    const float d = kiln_bf16_to_f32(xr[c]) - mean;
    v += d * d;
  }}
  const float rstd = 1.0f / sqrtf(kiln_warp_reduce<kiln_sum_op>(v) / (float)cols + eps);
  for (long long c = lane; c < cols; c += 32) y[row * cols + c] = kiln_f32_to_bf16((kiln_bf16_to_f32(xr[c]) - mean) * rstd);
}}
)", name);
}

void run_gelu_pass(const CudaRuntime& rt, const Function& gelu, CUdeviceptr y, CUdeviceptr bias, long long total,
                   long long cols) {
  LaunchConfig lc;
  lc.grid.x = unsigned(std::min<long long>((total + 255) / 256, 4096));
  lc.block.x = 256;
  launch(rt.cuda_stream(), gelu, lc, y, bias, total, cols);
}

// bias_gelu: fused, one rounding. bias_gelu_after_bias: A B + bias rounded to bf16, then GELU as a pass.
// bias_gelu_after_bare: A B rounded, then bias + GELU as a pass (the rounding is of A B, not of A B + bias:
// where the two nearly cancel its error is far larger than the result's).
// norm_bias: LayerNorm(A) B + bias (folded); norm_bias_after_pass: the same with LayerNorm(A) rounded to bf16.
enum class Expect { bare, bias, bias_gelu, bias_gelu_after_bias, bias_gelu_after_bare, norm_bias, norm_bias_after_pass };
constexpr float kNormEps = 1e-5f;

// A shape's device buffers, and its reference on sampled rows.
struct Workload {
  Shape s;
  Tensor a, b, c, bias_f32, bias_bf16;
  Tensor y, colsum, ones, zeros;  // LayerNorm(A) [m, k]; sum_k B[n, k]; gamma and beta [k]
  std::vector<float> bias;
  std::vector<int64_t> rows;
  std::vector<double> ref, mag;            // [rows, n]
  std::vector<double> norm_ref, norm_mag;  // [rows, n]: LayerNorm(A) B; rstd (sum |a b| + |mean| sum |b|)

  Workload(const CudaRuntime& rt, const Shape& shape) : s(shape) {
    // Uniform values from a fixed LCG (8192^2 of them quickly), B scaled so that C is of order 1.
    uint64_t state = 0x9e3779b97f4a7c15ull ^ uint64_t(s.m * 31 + s.n * 17 + s.k);
    auto uniform = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return float(double(state >> 11) * 0x1p-53 * 2.0 - 1.0);
    };
    const float scale = 1.7f / std::sqrt(float(s.k));
    Tensor ha = Tensor::empty(DType::bf16, {s.m, s.k}), hb = Tensor::empty(DType::bf16, {s.n, s.k});
    for (int64_t i = 0; i < ha.numel(); ++i) ha.data<uint16_t>()[i] = float_to_bf16(uniform());
    for (int64_t i = 0; i < hb.numel(); ++i) hb.data<uint16_t>()[i] = float_to_bf16(scale * uniform());
    Tensor hbias = Tensor::empty(DType::f32, {s.n}), hbias16 = Tensor::empty(DType::bf16, {s.n});
    for (int64_t j = 0; j < s.n; ++j) {
      hbias16.data<uint16_t>()[j] = float_to_bf16(uniform());
      bias.push_back(bf16_to_float(hbias16.data<uint16_t>()[j]));  // the same values for both
      hbias.data<float>()[j] = bias.back();
    }
    for (int64_t r : {int64_t{0}, s.m / 3, 2 * s.m / 3, s.m - 1})
      if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
    for (int64_t r : rows)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0, m = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const double x = double(bf16_to_float(ha.data<uint16_t>()[r * s.k + k])) *
                           double(bf16_to_float(hb.data<uint16_t>()[j * s.k + k]));
          acc += x;
          m += std::fabs(x);
        }
        ref.push_back(acc);
        mag.push_back(m);
      }
    std::vector<double> b_abs(size_t(s.n), 0.0), b_sum(size_t(s.n), 0.0);
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t k = 0; k < s.k; ++k) {
        const double v = bf16_to_float(hb.data<uint16_t>()[j * s.k + k]);
        b_sum[size_t(j)] += v, b_abs[size_t(j)] += std::fabs(v);
      }
    for (size_t ri = 0; ri < rows.size(); ++ri) {
      double mean = 0, var = 0;
      for (int64_t k = 0; k < s.k; ++k) mean += bf16_to_float(ha.data<uint16_t>()[rows[ri] * s.k + k]);
      mean /= double(s.k);
      for (int64_t k = 0; k < s.k; ++k) var += std::pow(bf16_to_float(ha.data<uint16_t>()[rows[ri] * s.k + k]) - mean, 2);
      const double rstd = 1.0 / std::sqrt(var / double(s.k) + double(kNormEps));
      for (int64_t j = 0; j < s.n; ++j) {
        const size_t x = ri * size_t(s.n) + size_t(j);
        norm_ref.push_back(rstd * (ref[x] - mean * b_sum[size_t(j)]));
        norm_mag.push_back(rstd * (mag[x] + std::fabs(mean) * b_abs[size_t(j)]));
      }
    }
    Tensor hsum = Tensor::empty(DType::f32, {s.n});
    for (int64_t j = 0; j < s.n; ++j) hsum.data<float>()[j] = float(b_sum[size_t(j)]);
    colsum = rt.upload(hsum);
    ones = rt.upload(Tensor::from_vector<float>(DType::f32, {s.k}, std::vector<float>(size_t(s.k), 1.0f)));
    zeros = rt.upload(Tensor::from_vector<float>(DType::f32, {s.k}, std::vector<float>(size_t(s.k), 0.0f)));
    y = rt.empty(DType::bf16, {s.m, s.k});
    a = rt.upload(ha), b = rt.upload(hb), bias_f32 = rt.upload(hbias), bias_bf16 = rt.upload(hbias16);
    c = rt.empty(DType::bf16, {s.m, s.n});
  }
  double flop() const { return 2.0 * double(s.m) * double(s.n) * double(s.k); }

  // C's sampled rows against the reference: "" or what is wrong.
  std::string check(const CudaRuntime& rt, Expect e) const {
    const Tensor got = rt.download(c);
    for (size_t ri = 0; ri < rows.size(); ++ri)
      for (int64_t j = 0; j < s.n; ++j) {
        const size_t x = ri * size_t(s.n) + size_t(j);
        const bool norm = e == Expect::norm_bias || e == Expect::norm_bias_after_pass;
        double want = norm ? norm_ref[x] : ref[x];
        if (e != Expect::bare) want += bias[size_t(j)];
        const double pre = want;
        const bool pass = e == Expect::bias_gelu_after_bias || e == Expect::bias_gelu_after_bare;
        if (pass || e == Expect::bias_gelu) want = 0.5 * want * (1.0 + std::erf(want / std::sqrt(2.0)));
        const double rounded = e == Expect::bias_gelu_after_bare ? std::fabs(ref[x]) : std::fabs(pre);
        const double y = bf16_to_float(got.data<uint16_t>()[rows[ri] * s.n + j]);
        // Output rounding, fp32 accumulation over K; a separate pass also rounds the pre-activation to
        // bf16 before GELU (whose slope is at most 1.13).
        // LayerNorm: the fold's fp32 error grows with the un-centred product; a pass rounds LayerNorm(A)
        // to bf16 (2^-9 of each term of the product, bounded by the rows' sum |a b| rstd).
        const double tol = 0x1p-8 * std::fabs(want) + 4.8 * std::sqrt(double(s.k)) * 0x1p-24 * ((norm ? norm_mag[x] : mag[x]) + 1) +
                           (pass ? 0x1p-8 * 1.13 * rounded : 0.0) +
                           (e == Expect::norm_bias_after_pass ? 0x1p-9 * norm_mag[x] : 0.0) + 1e-6 * (1 + std::fabs(pre));
        if (!(std::fabs(y - want) <= tol))
          return fmt::format("C[{},{}] = {}, reference {}", rows[ri], j, y, want);
      }
    return "";
  }
};

// Microseconds a run: `run` captured per_graph times into one graph, the median of 10 replays.
double graph_us(const CudaRuntime& rt, const std::function<void()>& run) {
  run();
  rt.synchronize();
  const auto from = rt.mark();
  run();
  const auto to = rt.mark();
  rt.synchronize();
  const double once_us = std::max(rt.elapsed_ms(*from, *to) * 1e3, 1.0);
  const int per_graph = int(std::clamp(2000.0 / once_us, 1.0, 200.0));
  rt.begin_capture();
  try {
    for (int i = 0; i < per_graph; ++i) run();
  } catch (...) {
    rt.abort_capture();
    throw;
  }
  const std::shared_ptr<const void> graph = rt.end_capture();
  rt.replay(graph.get());
  rt.synchronize();
  std::vector<double> us;
  for (int r = 0; r < 10; ++r) {
    const auto a = rt.mark();
    rt.replay(graph.get());
    const auto b = rt.mark();
    rt.synchronize();
    us.push_back(rt.elapsed_ms(*a, *b) * 1e3 / per_graph);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int sweep_gemm_cuda(const CudaGemmSweepArgs& args, const Options& options) {
  if (args.bare_only && args.epilogue_only) user_error("sweep gemm: --bare-only and --epilogue-only exclude each other");
  const std::vector<Shape> shapes = parse_shapes(args.shapes);
  const CudaRuntime rt(runtime::cuda_device_index(args.device), options);
  ModuleCache modules(rt, options);
  const GemmTemplateEpilogue bare{}, fused{true, GemmActivation::gelu};
  GemmTemplateEpilogue norm_bias{true};
  norm_bias.row_norm = true;
  // Every template kernel, compiled in one parallel batch.
  std::vector<GemmTemplateSpec> specs;
  std::vector<GemmTemplateConfig> configs = default_gemm_template_configs();
  if (compile_arch(rt.info()) == "sm_90a")
    for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) configs.push_back(c);
  for (const GemmTemplateConfig& c : configs) {
    for (const GemmTemplateEpilogue& e : {bare, fused}) specs.push_back({DType::bf16, true, e, c});
    if (c.family == GemmFamily::wgmma && c.split_k == 1 && !args.bare_only) specs.push_back({DType::bf16, true, norm_bias, c});
  }
  std::vector<CudaUnit> units;
  for (const GemmTemplateSpec& s : specs) units.push_back(gemm_template_unit(s));
  const CubinBatch batch = compile_cubins(units, compile_arch(rt.info()), options);
  for (size_t i = 0; i < units.size(); ++i) modules.add(units[i].name, batch.cubins[i]);
  std::vector<std::unique_ptr<GemmTemplateKernel>> kernels;
  for (const GemmTemplateSpec& s : specs) {
    try {
      kernels.push_back(std::make_unique<GemmTemplateKernel>(s, rt.context(), modules));
    } catch (const UserError& e) {
      std::fprintf(stderr, "sweep gemm: skipping %s: %s\n", gemm_config_name(s.config).c_str(), e.what());
    }
  }
  const std::string gelu_name = content_name("gelu", gelu_pass_source("kiln_gelu"));
  const Function gelu = modules.get(gelu_name, gelu_pass_source(gelu_name)).function(gelu_name);
  const std::string ln_name = content_name("layernorm", layernorm_pass_source("kiln_layernorm"));
  const Function layernorm = modules.get(ln_name, layernorm_pass_source(ln_name)).function(ln_name);
  const bool with_norm = compile_arch(rt.info()) == "sm_90a" && !args.bare_only;

  std::printf("device: %s; bf16, B [N,K], fp32 accumulation; %d templates compiled in %.1f s; CUDA-graph replay\n",
              rt.info().summary().c_str(), batch.compiled, batch.compile_seconds);
  std::printf("%6s %6s %6s %-9s  %-34s %10s %9s  %s\n", "M", "N", "K", "epilogue", "choice", "us", "TFLOP/s", "check");
  json records = json::array();
  for (const Shape& s : shapes) {
    const Workload w(rt, s);
    size_t ws_bytes = 0;
    for (const auto& k : kernels) ws_bytes = std::max(ws_bytes, k->workspace_bytes(s.m, s.n));
    const Tensor ws = rt.empty(DType::u8, {int64_t(std::max<size_t>(ws_bytes, 16))});
    for (int form = 0; form < 3; ++form) {
      const bool epilogue = form == 1, norm = form == 2;
      if ((epilogue && args.bare_only) || (form == 0 && args.epilogue_only) || (norm && !with_norm)) continue;
      const char* label = norm ? "ln+bias" : epilogue ? "bias+gelu" : "none";
      struct Candidate {
        std::string name;
        Expect expect;
        std::function<void()> run;
      };
      std::vector<Candidate> candidates;
      const std::string pick = gemm_config_name(choose_gemm_template_config(s.m, s.n, s.k, rt.info().sm_count));
      for (const auto& k : kernels) {
        const GemmTemplateKernel* kernel = k.get();
        const std::string config = gemm_config_name(kernel->spec().config);
        const bool fused_gelu = kernel->spec().epilogue.activation == GemmActivation::gelu;
        const bool fused_norm = kernel->spec().epilogue.row_norm;
        GemmTemplateArgs x;
        x.a = device_ptr(w.a), x.b = device_ptr(w.b), x.c = device_ptr(w.c), x.bias = device_ptr(w.bias_f32);
        x.workspace = device_ptr(ws), x.workspace_bytes = ws.nbytes();
        x.m = s.m, x.n = s.n, x.k = s.k, x.lda = s.k, x.ldb = s.k, x.ldc = s.n;
        if (!kernel->accepts(x)) continue;  // wgmma: rows the TMA cannot read
        if (norm || fused_norm) {
          if (!(norm && fused_norm)) continue;
          x.norm_colsum = device_ptr(w.colsum), x.norm_gamma = device_ptr(w.ones), x.norm_beta = device_ptr(w.zeros);
          x.norm_y = device_ptr(w.y), x.ldy = s.k, x.norm_eps = kNormEps;
          candidates.push_back({"template:" + config, Expect::norm_bias,
                                [&rt, kernel, x] { kernel->launch(rt.cuda_stream(), x); }});
          continue;
        }
        if (fused_gelu == epilogue)
          candidates.push_back({"template:" + config, epilogue ? Expect::bias_gelu : Expect::bare,
                                [&rt, kernel, x] { kernel->launch(rt.cuda_stream(), x); }});
        // The heuristic's config bare, then bias + GELU as a pass: what fusing the epilogue saves.
        if (epilogue && !fused_gelu && config == pick) {
          const CUdeviceptr bias16 = device_ptr(w.bias_bf16);
          candidates.push_back({"template+bias_gelu_pass:" + config, Expect::bias_gelu_after_bare,
                                [&rt, &gelu, kernel, x, bias16, s] {
                                  kernel->launch(rt.cuda_stream(), x);
                                  run_gelu_pass(rt, gelu, x.c, bias16, s.m * s.n, s.n);
                                }});
        }
      }
      // cuBLASLt: each heuristic algorithm, the fastest reported under the plain name.
      std::vector<std::shared_ptr<LtMatmul>> lts;
      for (GemmEpilogue le : epilogue || norm ? std::vector{GemmEpilogue::bias} : std::vector{GemmEpilogue::none}) {
        GemmProblem p;
        p.dtype = DType::bf16, p.m = s.m, p.n = s.n, p.k = s.k, p.trans_b = true, p.epilogue = le;
        auto lt = std::make_shared<LtMatmul>(rt.context(), p);
        const Tensor lt_ws = rt.empty(DType::u8, {int64_t(std::max<size_t>(lt->max_workspace_bytes(), 16))});
        for (int alg = 0; alg < lt->algorithms(); ++alg)
          for (bool pass : epilogue ? std::vector{false, true} : std::vector{false}) {
            if (norm) {
              const CUdeviceptr a = device_ptr(w.a), y = device_ptr(w.y), b = device_ptr(w.b), c = device_ptr(w.c),
                                bias = device_ptr(w.bias_bf16), lw = device_ptr(lt_ws);
              const size_t lw_bytes = lt_ws.nbytes();
              candidates.push_back({fmt::format("ln_pass+cublaslt+bias#{}", alg), Expect::norm_bias_after_pass,
                                    [&rt, &layernorm, lt, lt_ws, alg, a, y, b, c, bias, lw, lw_bytes, s] {
                                      LaunchConfig lc;
                                      lc.grid.x = unsigned((s.m + 7) / 8);
                                      lc.block.x = 256;
                                      const long long rows = s.m, cols = s.k;
                                      const float eps = kNormEps;
                                      launch(rt.cuda_stream(), layernorm, lc, a, y, rows, cols, eps);
                                      lt->run(rt.cuda_stream(), alg, y, b, bias, 0, c, lw, lw_bytes);
                                    }});
              continue;
            }
            const CUdeviceptr a = device_ptr(w.a), b = device_ptr(w.b), c = device_ptr(w.c),
                              bias = epilogue ? device_ptr(w.bias_bf16) : 0, lw = device_ptr(lt_ws);
            const size_t lw_bytes = lt_ws.nbytes();
            const long long n = s.m * s.n;
            const std::string name = !epilogue ? "cublaslt" : pass ? "cublaslt+bias+gelu_pass" : "cublaslt+bias";
            candidates.push_back({fmt::format("{}#{}", name, alg), !epilogue ? Expect::bare : pass ? Expect::bias_gelu_after_bias : Expect::bias,
                                  [&rt, &gelu, lt, lt_ws, alg, pass, a, b, c, bias, lw, lw_bytes, n, s] {
                                    lt->run(rt.cuda_stream(), alg, a, b, bias, 0, c, lw, lw_bytes);
                                    if (pass) run_gelu_pass(rt, gelu, c, 0, n, s.n);
                                  }});
          }
        lts.push_back(lt);
      }
      std::map<std::string, std::pair<double, std::string>> best;  // per choice name without #alg
      for (const Candidate& cand : candidates) {
        cand.run();
        const std::string problem = w.check(rt, cand.expect);
        const double us = problem.empty() ? graph_us(rt, cand.run) : 0;
        const double tflops = us > 0 ? w.flop() / (us * 1e-6) / 1e12 : 0;
        records.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k}, {"epilogue", label}, {"choice", cand.name},
                           {"us", us}, {"tflops", tflops}, {"check", problem.empty() ? "ok" : problem},
                           {"heuristic_pick", cand.name == "template:" + pick}});
        const std::string base = cand.name.substr(0, cand.name.find('#'));
        if (!problem.empty()) {
          std::printf("%6lld %6lld %6lld %-9s  %-34s %10s %9s  FAILED: %s\n", (long long)s.m, (long long)s.n,
                      (long long)s.k, label, cand.name.c_str(), "-", "-", problem.c_str());
          continue;
        }
        auto it = best.find(base);
        if (it == best.end() || us < it->second.first) best[base] = {us, cand.name};
      }
      for (const auto& [base, b] : best)
        std::printf("%6lld %6lld %6lld %-9s  %-34s %10.2f %9.1f  ok%s\n", (long long)s.m, (long long)s.n, (long long)s.k,
                    label, (base.rfind("cublaslt", 0) == 0 ? b.second : base).c_str(), b.first,
                    w.flop() / (b.first * 1e-6) / 1e12, base == "template:" + pick ? "  (heuristic's pick)" : "");
    }
  }
  if (!args.json_file.empty()) {
    const json doc = {{"device", rt.info().summary()}, {"dtype", "bf16"}, {"records", records}};
    write_report_file(args.json_file, doc.dump(1) + "\n");
  }
  return 0;
}

}  // namespace kiln::tools

#else

namespace kiln::tools {

int sweep_gemm_cuda(const CudaGemmSweepArgs&, const Options&) {
  user_error("sweep gemm: --device cuda: this kiln was built without the CUDA backend");
}

}  // namespace kiln::tools

#endif
