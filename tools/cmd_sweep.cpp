// kiln sweep softmax: times the three softmax routes of compiled mode on this machine over row widths
// 64..50265 (the fused row kernel forced per-row, the fused kernel forced split-row, and the library
// call: oneDNN plus its NaN scan), next to a plain copy of the same bytes, then derives the routing
// thresholds (softmax_route.h) and with --store writes them to the tuning database, where the router
// reads them. Also times masked attention probabilities Softmax(scores * scale + mask) of [8,12,S,S]:
// the fused kernel (one kernel) against the library fallback (the scale and mask apart, then oneDNN).
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
#include "backend/cpu/cpu_device.h"
#include "tools/cmd_sweep.h"

#include "tools/cmd_sweep_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "autotune/softmax_calibration.h"
#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/emit_pointwise.h"
#include "codegen/cpu/emit_row.h"
#include "kernels/onednn/softmax.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "passes/passes.h"
#include "report/html.h"
#include "schedule/fuse_pointwise.h"
#include "schedule/fuse_rows.h"
#include "schedule/softmax_route.h"
#include "support/error.h"
#include "tools/sweep_measure.h"

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

Graph softmax_graph(int64_t rows, int64_t width) {
  GraphBuilder b("sweep_softmax");
  ValueId x = b.input("x", DType::f32, {rows, width});
  b.output(b.op(OpKind::Softmax, {x}, {{"axis", int64_t{-1}}}, "sm"), "y");
  Graph g = b.build();
  infer_shapes(g, Options{});
  return g;
}

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
    per_row_limit = std::max(codegen::cpu::RowEmitOptions{}.split_min_cols, rs.empty() ? 0 : rs.back().width + 1);
  return RoutingThresholds{std::min(per_row_limit, library_from) - 1, library_from, "this sweep",
                           winning_up_to(rs, library_wins)};
}

// One pass over one width: each route's and the copy's median, kept where lower than before.
void measure_width(const SweepArgs& a, const std::vector<codegen::cpu::KernelSource>& sources,
                   const std::vector<codegen::cpu::CompiledKernel>& built, size_t i, WidthResult& r) {
  const int64_t n = r.rows * r.width;
  Tensor x = Tensor::empty(DType::f32, {r.rows, r.width});
  Tensor y = Tensor::empty(DType::f32, {r.rows, r.width});
  fill_random(x.data<float>(), n, static_cast<uint32_t>(r.width));
  std::vector<const void*> ins{x.raw()};
  auto* rows_fn = reinterpret_cast<codegen::cpu::RowEntry*>(built[2 * i].entry(sources[2 * i].name));
  auto* split_fn = reinterpret_cast<codegen::cpu::RowEntry*>(built[2 * i + 1].entry(sources[2 * i + 1].name));
  const onednn::SoftmaxShape shape{r.rows, r.width, 1};
  std::vector<double> ms = interleaved_times(
      {[&] { rows_fn(ins.data(), y.raw(), nullptr); }, [&] { split_fn(ins.data(), y.raw(), nullptr); },
       [&] {
         if (!onednn::softmax_f32(shape, false, x.data<float>(), y.data<float>()))
           user_error("sweep: oneDNN has no softmax for [{}, {}]", r.rows, r.width);
       },
       [&] { parallel_copy(x.data<float>(), y.data<float>(), n); }},
      a.budget_ms, 7, a.fastest);
  for (int k = 0; k < kRoutes; ++k) r.ms[k] = std::min(r.ms[k], ms[size_t(k)]);
  r.copy_ms = std::min(r.copy_ms, ms[3]);
}

std::vector<WidthResult> sweep_widths(const SweepArgs& a, const Options& options) {
  std::vector<WidthResult> results;
  std::vector<codegen::cpu::KernelSource> sources;
  codegen::cpu::RowEmitOptions per_row, split;
  per_row.split_min_cols = std::numeric_limits<int64_t>::max();
  split.split_min_cols = 1;
  for (int64_t w : a.widths) {
    WidthResult r;
    r.width = w;
    r.rows = std::max<int64_t>(8, a.elements / w);
    Graph g = softmax_graph(r.rows, w);
    auto groups = schedule::find_row_groups(g, std::vector<char>(g.nodes.size(), 0));
    KILN_INTERNAL_CHECK(groups.size() == 1, "sweep: softmax of width {} gave {} row groups", w, groups.size());
    for (const auto* o : {&per_row, &split}) {
      loops::RowKernel k = groups[0].kernel;
      k.name = fmt::format("sweep_softmax_{}x{}_{}", r.rows, w, o == &split ? "split" : "rows");
      sources.push_back(codegen::cpu::emit_row_cpp(k, *o).source);
    }
    results.push_back(r);
  }
  std::fprintf(stderr, "sweep: compiling %zu kernels (cached after the first run)\n", sources.size());
  std::vector<codegen::cpu::CompiledKernel> built = codegen::cpu::compile_kernels(sources, options);
  for (WidthResult& r : results) {
    std::fill(r.ms, r.ms + kRoutes, std::numeric_limits<double>::infinity());
    r.copy_ms = std::numeric_limits<double>::infinity();
  }
  for (int pass = 0; pass < a.passes; ++pass) {
    for (size_t i = 0; i < results.size(); ++i) measure_width(a, sources, built, i, results[i]);
  }
  return results;
}

struct AttentionResult {
  int64_t seq = 0;
  double ms[2] = {};  // fused (one kernel with scale and mask), library (pointwise apart + oneDNN)
  bool library_chosen = false;
};

// The kernel inputs of a group: graph inputs by name from `given`, constants from the graph.
std::vector<const void*> group_inputs(const Graph& g, const std::vector<ValueId>& inputs,
                                      const std::map<std::string, Tensor>& given) {
  std::vector<const void*> ptrs;
  for (ValueId v : inputs) {
    const Value& value = g.value(v);
    if (value.constant) ptrs.push_back(value.constant->raw());
    else ptrs.push_back(given.at(value.name).raw());
  }
  return ptrs;
}

// Softmax(scores * scale + mask), scores [8, 12, S, S], mask [1, 1, S, S], as the two routes' kernels
// run it into preallocated outputs: fused (one row kernel reading the mask by broadcast) against the
// library fallback (a pointwise kernel writing scale * scores + mask, then oneDNN's softmax of that).
std::vector<AttentionResult> sweep_attention(const SweepArgs& a, const Options& options) {
  std::vector<AttentionResult> out;
  for (int64_t s : a.attention_seqs) {
    GraphBuilder b("sweep_attention");
    ValueId scores = b.input("scores", DType::f32, {8, 12, s, s});
    ValueId mask = b.input("mask", DType::f32, {1, 1, s, s});
    ValueId scaled = b.op(OpKind::Mul, {scores, b.scalar(DType::f32, 0.125)});
    b.output(b.op(OpKind::Softmax, {b.op(OpKind::Add, {scaled, mask})}, {{"axis", int64_t{-1}}}, "sm"), "probs");
    Graph g = b.build();
    infer_shapes(g, Options{});
    auto fused = schedule::find_row_groups(g, std::vector<char>(g.nodes.size(), 0));
    std::vector<char> softmax_claimed(g.nodes.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) softmax_claimed[i] = g.nodes[i].op == OpKind::Softmax;
    auto pointwise = schedule::find_pointwise_groups(g, softmax_claimed);
    KILN_INTERNAL_CHECK(fused.size() == 1 && fused[0].nodes.size() == 3 && pointwise.size() == 1,
                        "sweep: attention gave {} row and {} pointwise groups", fused.size(), pointwise.size());
    fused[0].kernel.name = fmt::format("sweep_attention_{}_fused", s);
    pointwise[0].kernel.name = fmt::format("sweep_attention_{}_scale_mask", s);
    std::vector<codegen::cpu::CompiledKernel> built = codegen::cpu::compile_kernels(
        {codegen::cpu::emit_row_cpp(fused[0].kernel).source, codegen::cpu::emit_pointwise_cpp(pointwise[0].kernel).source},
        options);
    auto* fused_fn = reinterpret_cast<codegen::cpu::RowEntry*>(built[0].entry(fused[0].kernel.name));
    auto* pointwise_fn = reinterpret_cast<codegen::cpu::PointwiseEntry*>(built[1].entry(pointwise[0].kernel.name));

    std::map<std::string, Tensor> given;
    given.emplace("scores", Tensor::empty(DType::f32, {8, 12, s, s}));
    given.emplace("mask", Tensor::empty(DType::f32, {1, 1, s, s}));
    fill_random(given.at("scores").data<float>(), 8 * 12 * s * s, 7);
    float* m = given.at("mask").data<float>();
    for (int64_t i = 0; i < s; ++i)  // causal: -inf above the diagonal
      for (int64_t j = 0; j < s; ++j) m[i * s + j] = j > i ? -INFINITY : 0.0f;
    Tensor y = Tensor::empty(DType::f32, {8, 12, s, s}), t = Tensor::empty(DType::f32, {8, 12, s, s});
    std::vector<const void*> fused_in = group_inputs(g, fused[0].inputs, given);
    std::vector<const void*> pointwise_in = group_inputs(g, pointwise[0].inputs, given);
    const onednn::SoftmaxShape shape{8 * 12 * s, s, 1};
    std::vector<double> ms = interleaved_times(
        {[&] { fused_fn(fused_in.data(), y.raw(), nullptr); },
         [&] {
           pointwise_fn(pointwise_in.data(), t.raw(), nullptr);
           if (!onednn::softmax_f32(shape, false, t.data<float>(), y.data<float>()))
             user_error("sweep: oneDNN has no softmax for [{}, {}]", shape.outer, s);
         }},
        a.budget_ms * 4, 5, a.fastest);
    AttentionResult r;
    r.seq = s;
    r.ms[0] = ms[0];
    r.ms[1] = ms[1];
    r.library_chosen = schedule::routing_policy(options).masked_library_fallback;
    out.push_back(r);
  }
  return out;
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

  std::vector<WidthResult> rs = sweep_widths(sorted, options);
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
    for (const AttentionResult& r : sweep_attention(sorted, options)) {
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
