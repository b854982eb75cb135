// kiln sweep gemm: GFLOP/s of every GEMM choice on this machine for a list of shapes, bare and with a
// bias + GELU (erf) epilogue, through the autotuner (autotune/autotuner.h), which marks the one it
// picks. The choices, all with constant weights packed ahead of time as a model's would be:
//   template:<config>   kiln's generated GEMM (templates/gemm/cpu) with the epilogue in its store
//                       hook, every config of the autotune mode's space (fast: a handful, max: all);
//   onednn              oneDNN's matmul with the epilogue as post-ops, weights in its own layout;
//   onednn+epilogue     oneDNN's bare matmul, then the epilogue as a separate generated pass (what a
//                       compiler without epilogue fusion runs);
//   blas, blas+epilogue OpenBLAS's sgemm (B as given, no packing ahead), then that pass;
//   template+epilogue:<config>  the space's first template config bare, then that pass: the same
//                       GEMM as its fused twin, so the pair measures what fusing the epilogue saves.
// Each candidate is checked against an fp64 product of sampled rows before it may be timed. With
// --device cuda the GPU's choices are swept instead (tools/sweep_gemm_cuda.cpp).
// Every run benchmarks (stored winners are replaced, never reused; autotune_budget_s does not apply):
// the sweep is a measurement.
//
// The candidates are built here, not taken from the CPU backend: backend::cpu::tune_matmul_kernel
// builds a compiled model's (onednn, blas, template:<config>) and tunes them inside one call that
// returns only the winner; it has no unfused variants (onednn+epilogue, template+epilogue), and its
// candidates allocate their output on every timed call. Taking them from the backend needs its
// request before tuning (choices and slots, for the sweep to add its own and tune on its own
// Autotuner), the two unfused variants, and runs into a preallocated output.
#include "backend/cpu/cpu_device.h"
#include "tools/cmd_sweep_gemm.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>

#include "autotune/autotuner.h"
#include "autotune/choice_helpers.h"
#include "autotune/tuning_store.h"
#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen/cpu/toolchain.h"
#include "codegen/cpu/vector_math.h"
#include "kernels/onednn/fused.h"
#include "report/html.h"
#include "backend/cpu/library_kernel.h"
#include "backend/cpu/gemm_epilogue.h"
#include "schedule/softmax_route.h"
#include "support/error.h"
#include "kernels/blas/sgemm.h"
#include "templates/gemm/cpu/epilogue_pass.h"
#include "templates/gemm/cpu/gemm_kernel.h"
#include "tools/commands.h"
#include "tools/gemm_shape.h"
#include "tools/sweep_gemm_cuda.h"

namespace kiln::tools {
namespace {

using nlohmann::json;
namespace tg = templates::gemm;

using Shape = GemmShape;

struct GemmSweepArgs {
  std::vector<std::string> shapes;  // "MxNxK"; empty: the default list
  int64_t threads = 0;
  std::string json_file, html_file;
  bool bare_only = false, epilogue_only = false;
  std::string device = "cpu";  // cuda, cuda:N: tools/sweep_gemm_cuda.cpp
};

std::vector<Shape> default_shapes() {
  std::vector<Shape> s;
  for (int64_t m : {1, 32, 128, 512, 2048})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 768}, {3072, 768}, {768, 3072}}) s.push_back({m, n, k});
  s.push_back({2048, 2048, 2048});
  return s;
}

// GELU in ONNX's erf form, as compiled models' GEMM epilogues compute it.
std::string gelu_body() { return backend::cpu::activation_cpp(schedule::LibraryActivation::gelu_erf); }
double gelu(double v) { return backend::cpu::activation_fp64(schedule::LibraryActivation::gelu_erf, v); }

// Inputs, the reference rows and the output buffers of one shape.
struct Workload {
  Shape s;
  bool epilogue = false;
  std::vector<float> a, b, bias;
  std::vector<int64_t> rows;  // sampled rows of the output checked against fp64
  std::vector<double> want;   // rows.size() x n
  std::unique_ptr<autotune::GuardedBuffer> c;

  Workload(Shape shape, bool with_epilogue) : s(shape), epilogue(with_epilogue) {
    std::mt19937 rng(static_cast<uint32_t>(s.m * 131 + s.n * 7 + s.k));
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    a.resize(size_t(s.m * s.k));
    b.resize(size_t(s.k * s.n));
    bias.resize(size_t(s.n));
    for (float& v : a) v = d(rng);
    for (float& v : b) v = d(rng);
    for (float& v : bias) v = d(rng);
    for (int64_t r : {int64_t{0}, s.m / 3, s.m / 2, s.m - 1}) {
      if (rows.empty() || rows.back() != r) rows.push_back(r);
    }
    for (int64_t r : rows)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < s.k; ++q) acc += double(a[size_t(r * s.k + q)]) * double(b[size_t(q * s.n + j)]);
        want.push_back(epilogue ? gelu(acc + bias[size_t(j)]) : acc);
      }
    c = std::make_unique<autotune::GuardedBuffer>(size_t(s.m * s.n));
  }

  // NaN everywhere, so a candidate that skips an element cannot pass on an earlier one's output.
  void clear() { std::fill(c->data(), c->data() + s.m * s.n, NAN); }

  bool check(std::string& why) {
    if (!c->intact(why)) return false;
    std::vector<float> got;
    for (int64_t r : rows) got.insert(got.end(), c->data() + r * s.n, c->data() + (r + 1) * s.n);
    // f32 sums of K products of values in [-1, 1]: errors grow with K.
    return autotune::outputs_match(got.data(), want.data(), got.size(), {2e-6 * double(s.k), 1e-4}, why);
  }
  double gflop() const { return 2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9; }
};

// The epilogue alone as a generated pass over C (templates/gemm/cpu/epilogue_pass.h).
std::shared_ptr<const tg::EpiloguePass> epilogue_pass(const tg::GemmProblem& p, const tg::GemmEpilogue& e,
                                                      const Options& options) {
  return std::make_shared<const tg::EpiloguePass>(tg::EpiloguePass::compile(p, e, options));
}

void run_onednn(const onednn::FusedMatmul& fm, const tg::EpiloguePass* pass, onednn::FusedMatmul::Call call,
                Workload& w) {
  call.a = w.a.data();
  call.c = w.c->data();
  if (!fm.run(call)) user_error("oneDNN matmul failed");
  if (pass) pass->run(w.bias.data(), w.c->data(), w.s.m);
}

void run_blas(const tg::EpiloguePass* pass, Workload& w) {
  blas::SgemmCall call;
  call.m = w.s.m, call.n = w.s.n, call.k = w.s.k;
  call.a = w.a.data(), call.b = w.b.data(), call.c = w.c->data();
  blas::sgemm(call);
  if (pass) pass->run(w.bias.data(), w.c->data(), w.s.m);
}

std::vector<std::unique_ptr<autotune::Choice>> make_choices(Workload& w, const Options& options, bool exhaustive,
                                                           const std::vector<std::string>& backends, int threads) {
  std::vector<std::unique_ptr<autotune::Choice>> choices;
  auto enabled = [&](const char* b) { return std::find(backends.begin(), backends.end(), b) != backends.end(); };
  tg::GemmProblem p;
  p.m = w.s.m, p.n = w.s.n, p.k = w.s.k;
  p.b_constant = true;
  if (w.epilogue) p.bias = tg::GemmProblem::Bias::row;
  tg::GemmEpilogue e;
  if (w.epilogue) e.body = gelu_body();
  if (enabled("template")) {
    const std::vector<tg::GemmConfig> space =
        tg::config_space(p, codegen::cpu::detect_cpu_features(), exhaustive, tg::has_store_hook(p, e));
    for (const tg::GemmConfig& config : space) {
      auto kernel = std::make_shared<std::optional<tg::GemmKernel>>();
      choices.push_back(autotune::make_choice(
          {"template:" + config.name(),
           [kernel, p, config, e, &w, &options] {
             *kernel = std::move(tg::GemmKernel::compile({{p, config, e}}, options)[0]);
             (*kernel)->set_constant_b(w.b.data());
           },
           [kernel, &w, threads] { (*kernel)->run(w.bias.data(), w.a.data(), nullptr, w.c->data(), w.s.m, nullptr, threads); },
           [kernel, &w, threads](std::string& why) {
             w.clear();
             (*kernel)->run(w.bias.data(), w.a.data(), nullptr, w.c->data(), w.s.m, nullptr, threads);
             return w.check(why);
           }}));
    }
    // Last: in a tie (tie_margin) the autotuner keeps the earlier choice, the fused kernel.
    if (w.epilogue) {
      tg::GemmProblem bare = p;
      bare.bias = tg::GemmProblem::Bias::none;
      auto kernel = std::make_shared<std::optional<tg::GemmKernel>>();
      auto pass = std::make_shared<std::shared_ptr<const tg::EpiloguePass>>();
      auto run = [kernel, pass, &w, threads] {
        (*kernel)->run(nullptr, w.a.data(), nullptr, w.c->data(), w.s.m, nullptr, threads);
        (*pass)->run(w.bias.data(), w.c->data(), w.s.m, nullptr, threads);
      };
      choices.push_back(autotune::make_choice(
          {"template+epilogue:" + space[0].name(),
           [kernel, pass, bare, p, e, config = space[0], &w, &options] {
             *kernel = std::move(tg::GemmKernel::compile({{bare, config, {}}}, options)[0]);
             (*kernel)->set_constant_b(w.b.data());
             *pass = epilogue_pass(p, e, options);
           },
           run,
           [run, &w](std::string& why) {
             w.clear();
             run();
             return w.check(why);
           }}));
    }
  }
  if (enabled("onednn")) {
    for (bool separate : w.epilogue ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
      auto fm = std::make_shared<std::unique_ptr<onednn::FusedMatmul>>();
      auto loop = std::make_shared<std::shared_ptr<const tg::EpiloguePass>>();
      onednn::FusedMatmul::Call call;
      call.desc.a_dims = {w.s.m, w.s.k};
      call.desc.a_strides = {w.s.k, 1};
      call.desc.c_dims = {w.s.m, w.s.n};
      choices.push_back(autotune::make_choice(
          {separate ? "onednn+epilogue" : "onednn",
           [fm, loop, separate, call, p, e, &w, &options] {
             onednn::Epilogue epi;
             if (w.epilogue && !separate) {
               epi.bias = w.bias;
               epi.act = onednn::Activation::gelu_erf;
             }
             *fm = std::make_unique<onednn::FusedMatmul>(w.s.k, w.s.n, std::vector<int64_t>{w.s.n, 1}, nullptr,
                                                          w.b.data(), epi);
             onednn::FusedMatmul::Call c = call;
             c.a = w.a.data();
             c.c = w.c->data();
             if (!(*fm)->prepare(c)) user_error("oneDNN has no matmul for {}x{}x{}", w.s.m, w.s.n, w.s.k);
             if (separate) *loop = epilogue_pass(p, e, options);
           },
           [fm, loop, call, &w] { run_onednn(**fm, loop->get(), call, w); },
           [fm, loop, call, &w](std::string& why) {
             w.clear();
             run_onednn(**fm, loop->get(), call, w);
             return w.check(why);
           }}));
    }
  }
  if (enabled("blas")) {
    auto pass = std::make_shared<std::shared_ptr<const tg::EpiloguePass>>();
    choices.push_back(autotune::make_choice(
        {w.epilogue ? "blas+epilogue" : "blas",
         [pass, p, e, &w, &options] {
           if (w.epilogue) *pass = epilogue_pass(p, e, options);
         },
         [pass, &w] { run_blas(pass->get(), w); },
         [pass, &w](std::string& why) {
           w.clear();
           run_blas(pass->get(), w);
           return w.check(why);
         }}));
  }
  return choices;
}

int sweep_gemm(const GemmSweepArgs& a, Options options) {
  if (a.bare_only && a.epilogue_only) user_error("sweep gemm: --bare-only and --epilogue-only exclude each other");
  std::vector<Shape> shapes;
  for (const std::string& t : a.shapes) shapes.push_back(parse_gemm_shape(t));
  if (shapes.empty()) shapes = default_shapes();
  apply_threads(options, a.threads);
  const int threads = omp_get_max_threads();
  const std::vector<std::string> backends = autotune::gemm_backends(options);
  options.autotune_budget_s = 1e9;  // a measurement of every shape, not a model's compile: no budget
  autotune::Autotuner tuner(options, codegen::cpu::resolve_cache_dir(options) / autotune::kTuningStoreFileName);
  tuner.set_use_stored(false);
  if (tuner.mode() == autotune::TuneMode::off)
    user_error("sweep gemm: autotune=off measures nothing; use fast (the default) or max");
  const bool exhaustive = tuner.mode() == autotune::TuneMode::max;
  const std::string device = backend::cpu::device_key(options);
  std::printf("device: %s; autotune=%s; GFLOP/s counting 2*M*N*K (* = the autotuner's pick)\n", device.c_str(),
              autotune::mode_name(tuner.mode()));
  std::printf("%6s %6s %6s %-9s | %-30s %8s %8s | %8s %8s | %8s | %s\n", "M", "N", "K", "epilogue", "best template",
              "GFLOP/s", "+sep.", "onednn", "+sep.", "blas+sep", "template / onednn");
  json records = json::array();
  for (const Shape& s : shapes) {
    for (bool epilogue : {false, true}) {
      if ((epilogue && a.bare_only) || (!epilogue && a.epilogue_only)) continue;
      Workload w(s, epilogue);
      autotune::TuneRequest req;
      req.op_signature = epilogue ? "sweep:MatMul+bias+gelu_erf" : "sweep:MatMul";
      req.shape_key = fmt::format("M={},N={},K={}", s.m, s.n, s.k);
      req.dtype = "f32";
      req.device_key = device;
      req.library_versions = backend::cpu::gemm_library_versions();
      req.settings_key = autotune::gemm_settings_key(options);
      req.choices = make_choices(w, options, exhaustive, backends, threads);
      if (req.choices.empty()) user_error("sweep gemm: gemm_backends leaves no choice");
      autotune::TuneResult r = tuner.tune(req);
      double best_template = 0, onednn = 0, separate = 0, blas = 0, template_separate = 0;
      std::string best_name = "-";
      const char* label = epilogue ? "bias+gelu" : "none";
      for (const autotune::CandidateTiming& c : r.table) {
        if (c.status != autotune::CandidateStatus::timed && c.status != autotune::CandidateStatus::pruned) continue;
        const double gflops = c.median_us > 0 ? w.gflop() / (c.median_us * 1e-6) : 0;
        records.push_back({{"m", s.m}, {"n", s.n}, {"k", s.k}, {"epilogue", label}, {"choice", c.name},
                           {"gflops", gflops}, {"median_us", c.median_us}, {"chosen", c.name == r.winner}});
        if (c.name.rfind("template:", 0) == 0 && gflops > best_template) best_template = gflops, best_name = c.name;
        if (c.name == "onednn") onednn = gflops;
        if (c.name == "onednn+epilogue") separate = gflops;
        if (c.name.rfind("blas", 0) == 0) blas = gflops;
        if (c.name.rfind("template+epilogue:", 0) == 0) template_separate = gflops;
      }
      auto cell = [](double v) { return v > 0 ? fmt::format("{:.1f}", v) : std::string("-"); };
      std::printf("%6lld %6lld %6lld %-9s | %-30s %8s %8s | %8s %8s | %8s | %s  -> %s\n", static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k), label, best_name.substr(0, 30).c_str(),
                  cell(best_template).c_str(), cell(template_separate).c_str(), cell(onednn).c_str(),
                  cell(separate).c_str(), cell(blas).c_str(),
                  onednn > 0 && best_template > 0 ? fmt::format("{:.0f}%", 100 * best_template / onednn).c_str() : "-",
                  r.winner.c_str());
      for (const std::string& warning : r.warnings) std::fprintf(stderr, "sweep gemm: %s\n", warning.c_str());
    }
  }
  std::printf("%d tunes benchmarked, %.1f s\n", tuner.benchmarks_run(), tuner.budget_spent_s());
  json doc = {{"device", device}, {"threads", threads}, {"autotune", autotune::mode_name(tuner.mode())},
              {"records", records}};
  if (!a.json_file.empty()) write_report_file(a.json_file, doc.dump(1) + "\n");
  if (!a.html_file.empty()) write_report_file(a.html_file, report::sweep_html(doc, "kiln sweep gemm"));
  return 0;
}

}  // namespace

CLI::App* add_sweep_gemm(CLI::App* sweep, std::function<int(const Options&)>& action) {
  auto args = std::make_shared<GemmSweepArgs>();
  CLI::App* g = sweep->add_subcommand("gemm", "GFLOP/s of each GEMM choice (templates, oneDNN, OpenBLAS) over shapes, "
                                              "bare and with bias + GELU; the autotuner's pick marked");
  g->add_option("--shapes", args->shapes, "MxNxK shapes (default: M 1..2048 by bert's N, K, and 2048^3)")
      ->delimiter(',');
  g->add_option("--threads", args->threads, "worker threads (default: every core)");
  g->add_option("--json", args->json_file, "write one record per shape, epilogue and choice to FILE");
  g->add_option("--html", args->html_file, "write the curves (GFLOP/s by M per choice) as HTML to FILE");
  g->add_flag("--bare-only", args->bare_only, "only the bare GEMM");
  g->add_flag("--epilogue-only", args->epilogue_only, "only GEMM + bias + GELU");
  g->add_option("--device", args->device, "cpu (default), or cuda / cuda:N: the GPU's choices in graph replay");
  action = [args](const Options& options) {
    if (args->device == "cpu") return sweep_gemm(*args, options);
    if (!args->html_file.empty() || args->threads != 0) user_error("sweep gemm: --html and --threads are for --device cpu");
    return sweep_gemm_cuda({args->device, args->shapes, args->json_file, args->bare_only, args->epilogue_only}, options);
  };
  return g;
}

}  // namespace kiln::tools
