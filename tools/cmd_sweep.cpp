// kiln sweep softmax: times the three softmax routes of compiled mode on this machine over row widths
// 64..50265 (the fused row kernel per row, the fused kernel splitting rows across threads, and the
// library call: oneDNN plus its NaN scan), next to a plain copy of the same bytes, then derives the
// routing thresholds (softmax_route.h) and with --store writes them to the tuning database, where the
// router reads them. Also times masked attention probabilities Softmax(scores * scale + mask) of
// [8,12,S,S]: the fused kernel (one kernel) against the library fallback (the scale and mask apart,
// then oneDNN).
//
// Each route's kernel is the one a compiled model runs: compiler::compile of the softmax graph on the
// CPU backend, with settings that force the route (route_options), and the step that computes the
// width's output launched through its backend::Kernel into a preallocated output (sweep_steps.h).
// Every route's output is checked once against softmax in fp64 before it is timed.
//
// Method: rows = max(8, elements / width) so that every measurement moves the same 128 MiB (more than
// the last-level cache holds, so the copy measures memory bandwidth, as STREAM does); each
// width's routes and the copy run in turns (route 1, 2, 3, copy, route 1, ...) for a time budget and
// the median of each is kept (--fastest: the minimum, for a machine so shared that most runs wait for
// a core), so load from other processes falls on all alike; the width list is swept `passes` times
// and each route (and the copy) keeps its lowest value, so a burst of load that outlasts one width's
// turn does not decide. Bandwidth = bytes read + written per second (2 x rows x width x 4). Every
// route writes into a preallocated output.
//
// The routed choice per width is what a session runs under the derived thresholds
// (schedule::route_by_width): the library for short rows, per-row fused, split-row fused from
// max_fused_width + 1 (sessions emit softmax kernels with that split width), the library for wide rows.
#include "tools/cmd_sweep.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "autotune/softmax_calibration.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_device.h"
#include "compiler/compile.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "loops/row_kernel.h"
#include "report/html.h"
#include "schedule/softmax_route.h"
#include "support/error.h"
#include "tools/cmd_sweep_gemm.h"
#include "tools/sweep_attention.h"
#include "tools/sweep_measure.h"
#include "tools/sweep_steps.h"

namespace kiln::tools {
namespace {

using nlohmann::json;
using schedule::RoutingThresholds;

struct SweepArgs {
  std::string device = "cpu";
  std::string dtype = "f32";
  int64_t threads = 0;
  bool store = false;
  std::string json_file, html_file;
  std::vector<int64_t> widths = {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 30000, 50265};
  std::vector<int64_t> attention_seqs = {128, 512, 2048};
  int64_t elements = int64_t{16} << 20;  // per measurement: 64 MiB read and 64 MiB written (past a 32 MiB L3)
  double budget_ms = 150;               // per width and pass, all routes together
  int passes = 3;                       // over all widths; each route keeps its best median
  bool fastest = false;                 // the minimum of the runs instead of their median
};

enum Route { kPerRow = 0, kSplit = 1, kLibrary = 2, kRoutes = 3 };
const char* kRouteNames[kRoutes] = {"fused", "split", "library"};

struct WidthResult {
  int64_t width = 0, rows = 0;
  double ms[kRoutes] = {};
  double copy_ms = 0;
};

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : 0.0; }
double softmax_bytes(const WidthResult& r) { return 2.0 * double(r.rows) * double(r.width) * 4.0; }

// The measured route a session runs at `width` under thresholds t: the router's own rule.
Route routed(int64_t width, const RoutingThresholds& t) {
  schedule::WidthRoute w = schedule::route_by_width(width, t);
  return w.library ? kLibrary : w.split_rows ? kSplit : kPerRow;
}

// The widest suffix of the (sorted) widths where `wins(r)` holds at every one: its first width, or never.
int64_t winning_from(const std::vector<WidthResult>& rs, const std::function<bool(const WidthResult&)>& wins) {
  int64_t from = schedule::kNeverWidth;
  for (size_t i = rs.size(); i-- > 0 && wins(rs[i]);) from = rs[i].width;
  return from;
}

// The narrowest-first prefix of the widths where `wins(r)` holds at every one: its last width, or 0.
int64_t winning_up_to(const std::vector<WidthResult>& rs, const std::function<bool(const WidthResult&)>& wins) {
  int64_t up_to = 0;
  for (size_t i = 0; i < rs.size() && wins(rs[i]); ++i) up_to = rs[i].width;
  return up_to;
}

// Thresholds from the measurements (a route must win by more than 3% so that noise does not flip it):
// the split-row kernel from the narrowest width from which it beats per-row at every wider measured
// width; the library for the short rows up to the widest width below which it beats that fused
// kernel at every width, and from the narrowest width from which it beats it at every wider one;
// max_fused_width = the per-row limit below both (past the widest measured width when the split
// never wins: the measurements say nothing there, so not below the kernel's default).
RoutingThresholds derive_thresholds(const std::vector<WidthResult>& rs) {
  const int64_t split_from = winning_from(rs, [](const WidthResult& r) { return r.ms[kSplit] < 0.97 * r.ms[kPerRow]; });
  auto library_wins = [&](const WidthResult& r) {
    return r.ms[kLibrary] < 0.97 * r.ms[r.width < split_from ? kPerRow : kSplit];
  };
  const int64_t library_from = winning_from(rs, library_wins);
  int64_t per_row_limit = split_from;
  if (split_from == schedule::kNeverWidth)
    per_row_limit = std::max(loops::kRowSplitMinCols, rs.empty() ? 0 : rs.back().width + 1);
  return RoutingThresholds{std::min(per_row_limit, library_from) - 1, library_from, "this sweep",
                           winning_up_to(rs, library_wins)};
}

// The settings that make compiler::compile route every plain softmax the sweep's way: fused with the
// split never reached (softmax_max_fuse_width = never makes both thresholds never), fused split from
// two columns (softmax_max_fuse_width = 1: thresholds {1, 2}), or the library call.
Options route_options(Options options, Route route) {
  options.softmax_route = route == kLibrary ? "library" : "fused";
  if (route == kPerRow) options.softmax_max_fuse_width = schedule::kNeverWidth;
  if (route == kSplit) options.softmax_max_fuse_width = 1;
  return options;
}

// The one step that computes `output` in `exe`; it must be of `kind` (else the settings no longer force
// the route: an internal error).
std::vector<int> route_step(const compiler::Executable& exe, const std::string& output, compiler::StepKind kind,
                            const char* route) {
  std::vector<int> steps = steps_reaching(exe, output);
  KILN_INTERNAL_CHECK(steps.size() == 1 && exe.steps[size_t(steps[0])].kind == kind,
                      "sweep: the {} route's compile computes '{}' in {} steps (the first: {}), not in one {} step",
                      route, output, steps.size(),
                      steps.empty() ? "-" : compiler::step_kind_name(exe.steps[size_t(steps[0])].kind),
                      compiler::step_kind_name(kind));
  return steps;
}

// Every width's softmax as one graph (inputs x<width>, outputs y<width>), so that one compile per
// route builds every width's kernel, compiled in parallel as a model's are.
Graph softmax_widths_graph(const std::vector<WidthResult>& widths) {
  GraphBuilder b("sweep_softmax");
  for (const WidthResult& r : widths) {
    ValueId x = b.input(fmt::format("x{}", r.width), DType::f32, {r.rows, r.width});
    b.output(b.op(OpKind::Softmax, {x}, {{"axis", int64_t{-1}}}, fmt::format("sm{}", r.width)),
             fmt::format("y{}", r.width));
  }
  return b.build();
}

// One pass over one width: each route's and the copy's median, kept where lower than before. The
// first pass checks every route's output first.
void measure_width(const SweepArgs& a, const compiler::Executable (&routes)[kRoutes], bool check, int64_t max_bytes,
                   WidthResult& r) {
  const int64_t n = r.rows * r.width;
  Tensor x = Tensor::empty(DType::f32, {r.rows, r.width});
  Tensor y = Tensor::empty(DType::f32, {r.rows, r.width});
  fill_random(x.data<float>(), n, static_cast<uint32_t>(r.width));
  const std::string in = fmt::format("x{}", r.width), out = fmt::format("y{}", r.width);
  auto x_at = [&](int64_t i, int64_t j) { return double(x.data<float>()[i * r.width + j]); };
  std::vector<PreallocatedSteps> runs;
  runs.reserve(kRoutes);
  for (int k = 0; k < kRoutes; ++k) {
    const compiler::StepKind kind = k == kLibrary ? compiler::StepKind::library : compiler::StepKind::generated;
    runs.emplace_back(routes[k], route_step(routes[k], out, kind, kRouteNames[k]),
                      std::map<std::string, Tensor>{{in, x}, {out, y}}, max_bytes);
    if (!check) continue;
    std::fill(y.data<float>(), y.data<float>() + n, NAN);  // a route must write every row, not inherit them
    runs.back().launch();
    check_softmax_rows(y, r.rows, r.width, x_at, fmt::format("the {} route at width {}", kRouteNames[k], r.width));
  }
  std::vector<double> ms = interleaved_times({[&] { runs[kPerRow].launch(); }, [&] { runs[kSplit].launch(); },
                                              [&] { runs[kLibrary].launch(); },
                                              [&] { parallel_copy(x.data<float>(), y.data<float>(), n); }},
                                             a.budget_ms, 7, a.fastest);
  for (int k = 0; k < kRoutes; ++k) r.ms[k] = std::min(r.ms[k], ms[size_t(k)]);
  r.copy_ms = std::min(r.copy_ms, ms[3]);
}

std::vector<WidthResult> sweep_widths(const SweepArgs& a, const backend::Backend& cpu, const Options& options) {
  std::vector<WidthResult> results;
  for (int64_t w : a.widths) {
    WidthResult r;
    r.width = w;
    r.rows = std::max<int64_t>(8, a.elements / w);
    std::fill(r.ms, r.ms + kRoutes, std::numeric_limits<double>::infinity());
    r.copy_ms = std::numeric_limits<double>::infinity();
    results.push_back(r);
  }
  std::fprintf(stderr, "sweep: compiling %zu kernels (cached after the first run)\n", 2 * results.size());
  const Graph g = softmax_widths_graph(results);
  const compiler::Executable routes[kRoutes] = {
      compiler::compile(g, cpu, route_options(options, kPerRow), Mode::compiled),
      compiler::compile(g, cpu, route_options(options, kSplit), Mode::compiled),
      compiler::compile(g, cpu, route_options(options, kLibrary), Mode::compiled)};
  for (int pass = 0; pass < a.passes; ++pass)
    for (WidthResult& r : results) measure_width(a, routes, pass == 0, options.max_tensor_bytes, r);
  return results;
}

int sweep_softmax(const SweepArgs& a, Options options) {
  if (a.device != "cpu") user_error("sweep: --device {}: only cpu is supported", a.device);
  if (a.dtype != "f32") user_error("sweep: --dtype {}: only f32 is supported (the library route is f32 only)", a.dtype);
  if (a.widths.empty()) user_error("sweep: --widths is empty");
  for (int64_t w : a.widths)
    if (w < 1 || w > (int64_t{1} << 28)) user_error("sweep: width {} outside 1..2^28", w);
  for (int64_t s : a.attention_seqs)
    if (s < 1 || s > 4096) user_error("sweep: attention sequence {} outside 1..4096", s);
  if (a.elements < 1 || a.elements > (int64_t{1} << 28)) user_error("sweep: --elements outside 1..2^28");
  if (a.passes < 1 || a.passes > 100) user_error("sweep: --passes outside 1..100");
  apply_threads(options, a.threads);
  std::vector<int64_t> widths = a.widths;
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  SweepArgs sorted = a;
  sorted.widths = widths;

  const std::string key = backend::cpu::device_key(options);
  const std::string db = backend::cpu::tuning_db_path(options);
  std::string why_defaults;
  RoutingThresholds in_use = backend::cpu::routing_thresholds(options, &why_defaults);
  std::printf("device: %s\n", key.c_str());
  std::printf("routing now uses: %s%s%s\n", in_use.source.c_str(), why_defaults.empty() ? "" : " (",
              why_defaults.empty() ? "" : (why_defaults + ")").c_str());

  const backend::cpu::CpuBackend cpu;
  std::vector<WidthResult> rs = sweep_widths(sorted, cpu, options);
  RoutingThresholds derived = derive_thresholds(rs);
  std::vector<double> copies;
  for (const WidthResult& r : rs) copies.push_back(gbps(softmax_bytes(r), r.copy_ms));
  std::vector<double> sorted_copies = copies;
  std::nth_element(sorted_copies.begin(), sorted_copies.begin() + sorted_copies.size() / 2, sorted_copies.end());
  const double copy_gbps = sorted_copies[sorted_copies.size() / 2];

  std::printf("\nsoftmax f32 [rows, width], %d threads, %s of interleaved runs (* = routed with the thresholds "
              "below; copy = the same bytes copied)\n",
              omp_get_max_threads(), a.fastest ? "fastest" : "medians");
  std::printf("%7s %7s |%-19s|%-19s|%-19s| %6s | %-8s %6s %6s\n", "width", "rows", "  fused GB/s ns/row",
              "  split GB/s ns/row", "library GB/s ns/row", "copy", "fastest", "routed", "fused%");
  json records = json::array();
  bool all_within = true;
  double best_fused_fraction = 0, worst_fused_fraction = 1e300;
  const int64_t split_from = schedule::split_min_width(derived);
  Route previous_best = kRoutes;
  for (size_t i = 0; i < rs.size(); ++i) {
    const WidthResult& r = rs[i];
    Route best = static_cast<Route>(std::min_element(r.ms, r.ms + kRoutes) - r.ms);
    Route chosen = routed(r.width, derived);
    double ratio = r.ms[chosen] / r.ms[best];
    all_within = all_within && ratio <= 1.10;
    double fused_fraction = gbps(softmax_bytes(r), r.ms[r.width < split_from ? kPerRow : kSplit]) / copies[i];
    best_fused_fraction = std::max(best_fused_fraction, fused_fraction);
    worst_fused_fraction = std::min(worst_fused_fraction, fused_fraction);
    std::printf("%7lld %7lld |", static_cast<long long>(r.width), static_cast<long long>(r.rows));
    for (int k = 0; k < kRoutes; ++k) {
      double ns_row = r.ms[k] * 1e6 / double(r.rows);
      std::printf(" %6.1f %9.0f%c |", gbps(softmax_bytes(r), r.ms[k]), ns_row, k == chosen ? '*' : ' ');
      records.push_back({{"width", r.width},
                         {"rows", r.rows},
                         {"route", kRouteNames[k]},
                         {"gbps", gbps(softmax_bytes(r), r.ms[k])},
                         {"ns_per_row", ns_row},
                         {"chosen", k == chosen}});
    }
    std::printf(" %6.1f | %-8s %5.2fx %5.0f%%%s\n", copies[i], kRouteNames[best], ratio, 100 * fused_fraction,
                previous_best != kRoutes && best != previous_best ? "  <- crossover" : "");
    previous_best = best;
  }
  std::printf("copy bandwidth (median over widths): %.1f GB/s\n", copy_gbps);
  auto limit = [](int64_t w) { return w == schedule::kNeverWidth ? std::string("never") : std::to_string(w); };
  std::printf("derived thresholds: library up to %lld, fused per row up to %s, split rows above, library from %s\n",
              static_cast<long long>(derived.library_max_width), limit(derived.max_fused_width).c_str(),
              limit(derived.library_min_width).c_str());
  std::printf("routed choice within 10%% of the fastest at every width: %s; fused route %.0f-%.0f%% of copy "
              "(fused%% = the fused kernel a session runs at that width, per row or split)\n",
              all_within ? "yes" : "NO", 100 * worst_fused_fraction, 100 * best_fused_fraction);

  json attention = json::array();
  if (!a.attention_seqs.empty()) {
    std::printf("\nmasked attention Softmax(scores * 0.125 + mask), [8, 12, S, S], kernels into preallocated outputs\n");
    std::printf("%6s | %-17s | %-17s\n", "S", "fused GB/s ms", "library GB/s ms");
    for (const AttentionResult& r : sweep_attention(a.attention_seqs, a.budget_ms * 4, a.fastest, cpu, options)) {
      double bytes = (2.0 * 8 * 12 + 1) * double(r.seq) * double(r.seq) * 4.0;
      std::printf("%6lld |", static_cast<long long>(r.seq));
      for (int k = 0; k < 2; ++k) {
        bool chosen = (k == 1) == r.library_chosen;
        std::printf(" %6.1f %9.3f%c |", gbps(bytes, r.ms[k]), r.ms[k], chosen ? '*' : ' ');
        attention.push_back({{"shape", {8, 12, r.seq, r.seq}},
                             {"route", k == 0 ? "fused" : "library"},
                             {"gbps", gbps(bytes, r.ms[k])},
                             {"ms", r.ms[k]},
                             {"chosen", chosen}});
      }
      std::printf("\n");
    }
  }

  json doc = {{"device", key},
             {"threads", omp_get_max_threads()},
             {"dtype", a.dtype},
             {"statistic", a.fastest ? "fastest" : "median"},
             {"copy_gbps", copy_gbps},
             {"thresholds",
              {{"library_max_width", derived.library_max_width},
               {"max_fused_width", derived.max_fused_width},
               {"library_min_width", derived.library_min_width == schedule::kNeverWidth ? json(nullptr)
                                                                                        : json(derived.library_min_width)}}},
             {"in_use_before", in_use.source},
             {"routed_within_10_percent", all_within},
             {"fused_fraction_of_copy", best_fused_fraction},
             {"fused_fraction_of_copy_worst", worst_fused_fraction},
             {"records", records},
             {"attention", attention},
             {"stored", nullptr}};
  if (a.store) {
    doc["stored"] = db;
    autotune::store_softmax_calibration(db, key,
                                        {derived.max_fused_width, derived.library_min_width, derived.library_max_width},
                                        doc);
    RoutingThresholds now = backend::cpu::routing_thresholds(options);
    std::printf("\nstored for this device; routing now uses: %s\n", now.source.c_str());
  } else {
    std::printf("\nnot stored (--store writes these thresholds to %s)\n", db.c_str());
  }
  if (!a.json_file.empty()) write_report_file(a.json_file, doc.dump(1) + "\n");
  if (!a.html_file.empty()) write_report_file(a.html_file, report::sweep_html(doc, "kiln sweep softmax"));
  return 0;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "measure kernel routes on this machine and calibrate the router");
  cmd->require_subcommand(1);
  CLI::App* sm = cmd->add_subcommand("softmax", "time fused, split-row fused and library softmax over row widths");
  sm->add_option("--device", args->device, "device to calibrate (cpu)");
  sm->add_option("--dtype", args->dtype, "element type (f32)");
  sm->add_option("--threads", args->threads, "worker threads (default: every core; part of the device key)");
  sm->add_flag("--store", args->store, "store the derived thresholds as this device's calibration");
  sm->add_option("--json", args->json_file, "write copy_gbps and one record per width and route to FILE");
  sm->add_option("--html", args->html_file, "write the curves (GB/s by width per route, chosen marked) as HTML to FILE");
  // For tests and quick looks: a short width list, fewer elements, a smaller time budget.
  sm->add_option("--widths", args->widths, "row widths to time")->delimiter(',')->group("");
  sm->add_option("--attention-seqs", args->attention_seqs, "attention sequence lengths (empty: none)")
      ->delimiter(',')
      ->group("");
  sm->add_flag_function("--no-attention", [args](int64_t) { args->attention_seqs.clear(); })->group("");
  sm->add_option("--elements", args->elements, "elements per measurement")->group("");
  sm->add_option("--budget-ms", args->budget_ms, "time budget per width and pass")->group("");
  sm->add_option("--passes", args->passes, "sweeps over the widths")->group("");
  sm->add_flag("--fastest", args->fastest,
               "keep each route's fastest run instead of the median (for a machine shared with other work)");
  auto gemm_action = std::make_shared<std::function<int(const Options&)>>();
  CLI::App* gemm = add_sweep_gemm(cmd, *gemm_action);
  return {cmd, [args, sm, gemm, gemm_action](const Options& options) {
            if (gemm->parsed()) return (*gemm_action)(options);
            return sm->parsed() ? sweep_softmax(*args, options) : 1;
          }};
}

}  // namespace kiln::tools
