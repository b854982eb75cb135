// kiln bench MODEL.onnx... | --suite zoo: kiln eager, kiln compiled and (--peer ort) ONNX Runtime on the
// same inputs and threads in one process, with compile times and accuracy; a table, --json, --html.
// --device cuda: kiln compiled on the GPU (accuracy against kiln eager on the CPU) and, with --peer torch,
// PyTorch's eager and torch.compile modes beside it (bench_device.cpp).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <optional>

#include "backend/cpu/cpu_device.h"
#include "autotune/softmax_calibration.h"
#include "report/bench.h"
#include "report/html.h"
#include "report/locate.h"
#include "report/ort_peer.h"
#include "report/torch_peer.h"
#include "runtime/backends.h"
#include "schedule/softmax_route.h"
#include "support/error.h"
#include "tools/bench_device.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct BenchArgs {
  std::vector<std::string> models, dims, sweeps;
  std::string suite, zoo_dir, peer, ort_dir, json_file, html_file, python;
  std::string device;     // empty: the `device` setting
  std::string precision;  // empty: the `precision` setting
  int64_t threads = 0;
  int iters = 30, warmup = 5, top = 10, settle_ms = 50;
  double tol = 1e-4, torch_budget_s = 900;
  uint64_t seed = 1;
};

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

// The command as a person would type it again (for the reports).
std::string command_line(const BenchArgs& a, int threads, const std::string& device, const std::string& precision) {
  std::string c = "kiln bench";
  for (const auto& m : a.models) c += " " + m;
  if (!a.suite.empty()) c += " --suite " + a.suite;
  if (device != "cpu") c += " --device " + device;
  if (precision != "fp32") c += " --precision " + precision;
  for (const auto& d : a.dims) c += " --dim " + d;
  if (!a.peer.empty()) c += " --peer " + a.peer;
  c += fmt::format(" --threads {} --iters {} --warmup {}", threads, a.iters, a.warmup);
  return c;
}

std::vector<report::BenchModel> models_to_run(const BenchArgs& a) {
  std::map<std::string, int64_t> dims = parse_dims(a.dims);
  std::vector<report::BenchModel> models;
  if (!a.suite.empty()) {
    fs::path file = a.suite;
    if (!fs::exists(file)) {
      auto found = report::find_project_file(fs::path("bench") / "models" / (a.suite + ".txt"));
      if (!found) user_error("--suite {}: no file {} nor bench/models/{}.txt near the current folder or the kiln binary",
                             a.suite, a.suite, a.suite);
      file = *found;
    }
    fs::path zoo = a.zoo_dir;
    if (zoo.empty()) zoo = report::find_project_file("build/zoo").value_or(fs::path("build/zoo"));
    models = report::read_suite(file, zoo);
  }
  for (const auto& path : a.models) {
    if (!fs::exists(path)) user_error("{}: no such file", path);
    models.push_back({fs::path(path).stem().string(), path, {}});
  }
  if (models.empty()) models.push_back({"demo", "", {}});  // as `kiln run` does: the bundled transformer
  for (auto& m : models)
    for (const auto& [k, v] : dims) m.dims[k] = v;  // --dim overrides the suite's sizes
  return models;
}

std::string cell(const json& v, const char* fmt_spec, const char* suffix = "") {
  if (!v.is_number()) return "-";
  return fmt::format(fmt::runtime(fmt_spec), v.get<double>()) + suffix;
}

void print_table(const std::vector<json>& records) {
  std::printf("| model | sizes | eager ms | compiled ms | ORT ms | compiled vs eager | compiled vs ORT | "
              "compile cold s | compile warm s | kernels / ops | accuracy |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const json& r : records) {
    std::string sizes;
    for (auto& [k, v] : r["dims"].items()) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v.dump());
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s (%s) |\n",
                r["model"].get<std::string>().c_str(), sizes.c_str(), cell(r["eager_ms"], "{:.2f}").c_str(),
                cell(r["compiled_ms"], "{:.2f}").c_str(), cell(r["ort_ms"], "{:.2f}").c_str(),
                cell(r["speedup_vs_eager"], "{:.2f}", "x").c_str(), cell(r["speedup_vs_ort"], "{:.2f}", "x").c_str(),
                cell(r["compile_s_cold"], "{:.2f}").c_str(), cell(r["compile_s_warm"], "{:.2f}").c_str(),
                r["kernels"].get<int>(), r["ops"].get<int>(), r["accuracy"].get<std::string>().c_str(),
                r["rule"].get<std::string>().c_str());
  }
}

// The sweeps the HTML report draws: each --sweep file, else the softmax sweep stored with this
// device's calibration (if any).
json sweeps_for_report(const BenchArgs& a, const Options& options) {
  json sweeps = json::array();
  for (const std::string& path : a.sweeps) {
    std::ifstream f(path);
    if (!f) user_error("--sweep {}: cannot read it", path);
    json sweep = json::parse(f, nullptr, false);
    if (sweep.is_discarded()) user_error("--sweep {}: not JSON (expected what `kiln sweep ... --json` writes)", path);
    sweeps.push_back({{"origin", path}, {"sweep", sweep}});
  }
  if (a.sweeps.empty() && options.device == "cpu") {  // the CPU's calibration says nothing of a device
    const std::string db = backend::cpu::tuning_db_path(options);
    if (auto stored = autotune::load_softmax_measurements(db, backend::cpu::device_key(options)))
      sweeps.push_back({{"origin", "the calibration stored for this device in " + db}, {"sweep", *stored}});
  }
  return sweeps;
}

int run(const BenchArgs& a, Options options) {
  if (!a.device.empty()) options.set("device", a.device);
  if (!a.precision.empty()) options.set("precision", a.precision);
  const bool on_device = options.device != "cpu";
  if (a.iters < 1) user_error("--iters must be at least 1");
  if (a.warmup < 0) user_error("--warmup must be >= 0");
  if (a.settle_ms < 0) user_error("--settle-ms must be >= 0");
  if (!(a.tol >= 0)) user_error("--tol must be >= 0");
  if (!(a.torch_budget_s > 0)) user_error("--torch-budget-s must be > 0");
  if (!a.peer.empty() && a.peer != "ort" && a.peer != "torch")
    user_error("--peer must be ort or torch, got '{}'", a.peer);
  if (a.peer == "ort" && on_device)
    user_error("--peer ort: ONNX Runtime is a CPU peer here (onnxruntime-node's CPU library); on device {} use "
               "--peer torch", options.device);
  if (a.peer == "torch" && !on_device)
    user_error("--peer torch: PyTorch's peer (scripts/torch_peer.py) times the GPU; use it with --device cuda");
  apply_threads(options, a.threads);
  const int threads = omp_get_max_threads();
  std::vector<report::BenchModel> models = models_to_run(a);

  // Peers and the device fail before any work when something is missing.
  std::optional<report::OrtPeer> peer;
  if (a.peer == "ort") peer.emplace(report::locate_ort(a.ort_dir));
  std::optional<report::TorchLocation> torch;
  if (a.peer == "torch") torch = report::locate_torch(a.python);
  if (on_device) runtime::make_backend(options, Mode::compiled);  // no driver or no GPU: the user error here

  report::BenchSettings settings;
  settings.iters = a.iters;
  settings.warmup = a.warmup;
  settings.seed = a.seed;
  settings.top_kernels = a.top;
  settings.tol = a.tol;
  settings.settle_ms = a.settle_ms;
  json doc = {{"kiln_version", KILN_VERSION},
              {"date", utc_now()},
              {"command", command_line(a, threads, options.device, options.precision)},
              {"precision", options.precision},
              {"device", options.device},
              {"threads", threads},
              {"iters", a.iters},
              {"warmup", a.warmup},
              {"peer", peer    ? json("ONNX Runtime " + peer->version() + " (onnxruntime-node, CPU)")
                       : torch ? json(fmt::format("PyTorch {} on {} (scripts/torch_peer.py: eager, torch.compile "
                                                  "default and reduce-overhead; {})",
                                                  torch->version, torch->gpu, torch_dtype(options)))
                               : json()},
              {"records", json::array()}};
  std::vector<json> records;
  for (const auto& m : models) {
    json record;
    try {
      record = report::bench_model(m, settings, options, peer ? &*peer : nullptr, threads);
    } catch (const report::PeerError& e) {
      // ONNX Runtime failed on this model: bench it without the peer, say why, and start a fresh
      // helper for the next model (the old one may be gone).
      std::fprintf(stderr, "kiln bench: %s: %s; measuring it without the peer\n", m.name.c_str(), e.what());
      peer.reset();
      record = report::bench_model(m, settings, options, nullptr, threads);
      record["ort_error"] = e.what();
      try {
        peer.emplace(report::locate_ort(a.ort_dir));
      } catch (const UserError& restart) {
        std::fprintf(stderr, "kiln bench: ONNX Runtime could not be restarted (%s); no peer from here on\n",
                     restart.what());
      }
    }
    records.push_back(std::move(record));
    doc["records"] = records;
    if (!a.json_file.empty()) write_report_file(a.json_file, doc.dump(2) + "\n");  // after each model: nothing lost
  }
  if (torch) {  // after kiln's measurements, so that the GPU is PyTorch's alone
    add_torch_peer(records, *torch, options, a.iters, a.warmup, a.torch_budget_s);
    doc["records"] = records;
    if (!a.json_file.empty()) write_report_file(a.json_file, doc.dump(2) + "\n");
  }
  if (on_device) {
    std::printf("%s, device %s, %d timed runs (median; kiln replays its CUDA graph; best torch / kiln = the fastest "
                "PyTorch mode's median / kiln's)%s\n",
                doc["date"].get<std::string>().c_str(), options.device.c_str(), a.iters,
                torch ? (", peer " + doc["peer"].get<std::string>()).c_str() : "");
    print_device_table(records, options.device);
  } else {
    std::printf("%s, %d threads, %d timed runs per side (median; speedup = other / compiled)%s%s\n",
                doc["date"].get<std::string>().c_str(), threads, a.iters,
                options.precision == "fp32" ? ""
                                            : (", compiled in " + options.precision +
                                               " (accuracy: the low-precision rule against eager fp32 and the peer)")
                                                  .c_str(),
                peer ? (", peer " + doc["peer"].get<std::string>()).c_str() : "");
    print_table(records);
  }
  for (const json& r : records)
    if (r.value("ort_error", json()).is_string())
      std::printf("ONNX Runtime failed on %s: %s\n", r["model"].get<std::string>().c_str(),
                  r["ort_error"].get<std::string>().c_str());
  if (!a.html_file.empty()) {
    doc["sweeps"] = sweeps_for_report(a, options);
    write_report_file(a.html_file, report::bench_html(doc));
  }
  int failed = 0;
  for (const json& r : records)
    if (r["accuracy"] != "pass") {
      ++failed;
      std::string vs_ort = r["accuracy_vs_ort"].is_null() ? "" : "; vs ORT: " + r["accuracy_vs_ort"]["detail"].get<std::string>();
      std::printf("accuracy FAILED for %s: vs eager: %s%s\n", r["model"].get<std::string>().c_str(),
                  r["accuracy_vs_eager"]["detail"].get<std::string>().c_str(), vs_ort.c_str());
    }
  return failed ? 1 : 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "latency of kiln eager, kiln compiled and (--peer ort) ONNX Runtime, compile time and accuracy");
  cmd->add_option("models", args->models, ".onnx files (none and no --suite: the bundled demo transformer)");
  cmd->add_option("--suite", args->suite, "a suite of bench/models (e.g. zoo) or a suite file");
  cmd->add_option("--zoo-dir", args->zoo_dir, "where suite models are: DIR/NAME/NAME.onnx (default build/zoo)");
  cmd->add_option("--dim", args->dims, "SYMBOL=SIZE for a symbolic dimension (repeatable; overrides the suite's)");
  cmd->add_option("--threads", args->threads, "threads for every side (default: every core)");
  cmd->add_option("--iters", args->iters, "timed runs per side (default 30)");
  cmd->add_option("--warmup", args->warmup, "untimed runs per side first (default 5)");
  cmd->add_option("--peer", args->peer,
                  "ort: also ONNX Runtime (onnxruntime-node, scripts/install_ort.sh build/ort; the CPU); torch: also "
                  "PyTorch eager and torch.compile (scripts/torch_peer.py; with --device cuda)");
  cmd->add_option("--python", args->python,
                  "the python3 with PyTorch that runs scripts/torch_peer.py (default: python3 on PATH)");
  cmd->add_option("--torch-budget-s", args->torch_budget_s,
                  "seconds scripts/torch_peer.py may take for every model (default 900; jobs past it are skipped)");
  cmd->add_option("--ort-dir", args->ort_dir, "the folder holding node_modules/onnxruntime-node (default build/ort)");
  cmd->add_option("--json", args->json_file, "write one record per model to this file");
  cmd->add_option("--html", args->html_file, "write a self-contained HTML report (inline SVG charts) to this file");
  cmd->add_option("--sweep", args->sweeps,
                  "a `kiln sweep ... --json` file whose curves the HTML report shows (repeatable; default: the "
                  "softmax sweep stored with this device's calibration)");
  cmd->add_option("--device", args->device,
                  "cpu (default) or cuda / cuda:N: kiln compiled on that GPU, accuracy against kiln eager on the CPU "
                  "(the `device` setting)");
  cmd->add_option("--precision", args->precision,
                  "fp32 (default), bf16 or fp16: what the compiled side computes in (the `precision` setting); eager "
                  "runs fp32, and the compiled side answers to it and to the peer by the low-precision rule");
  cmd->add_option("--seed", args->seed, "seed for the generated inputs");
  cmd->add_option("--tol", args->tol,
                  "allclose tolerance of the accuracy rule (default 1e-4; 0 forces the fp64 RMSE check)");
  cmd->add_option("--settle-ms", args->settle_ms,
                  "idle ms before each CPU run so the last side's spinning worker threads stop (default 50; none on a "
                  "device)");
  cmd->add_option("--top", args->top, "kernels per model in the report's top list (default 10)");
  return {cmd, [args](const Options& options) { return run(*args, options); }};
}

}  // namespace kiln::tools
