// Timings behind default_routing_thresholds() (report only, never asserted): a plain f32 softmax of
// [rows, width] as the fused row kernel forced per-row, the fused row kernel forced split-row, the
// library call (oneDNN plus the NaN scan) and the eager kernel, medians of interleaved runs in one
// process. Runs only with KILN_ROUTE_BENCH=1; KILN_ROUTE_BENCH_ROWS (default 64) sets the rows,
// KILN_CACHE_DIR a kernel cache kept across runs.
//
//   KILN_ROUTE_BENCH=1 OMP_NUM_THREADS=1 build-route/tests/test_routing --gtest_filter='RouteBench.*'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <omp.h>

#include "backend/cpu/cpu_backend.h"
#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/emit_row.h"
#include "kernels/onednn/softmax.h"
#include "routing_test_util.h"
#include "runtime/node_runner.h"
#include "schedule/fuse_library.h"
#include "schedule/fuse_rows.h"
#include "backend/cpu/library_kernel.h"

namespace kiln::routing_test {
namespace {

bool bench_enabled() {
  const char* e = std::getenv("KILN_ROUTE_BENCH");
  return e && std::string(e) == "1";
}

// Median milliseconds of each function, run in turns (f0, f1, ..., f0, f1, ...) so that load from
// other processes falls on all alike; about `budget_ms` in total.
std::vector<double> interleaved_medians(const std::vector<std::function<void()>>& fs, double budget_ms) {
  using clock = std::chrono::steady_clock;
  auto time = [](const std::function<void()>& f) {
    auto s = clock::now();
    f();
    return std::chrono::duration<double, std::milli>(clock::now() - s).count();
  };
  double round = 0;
  for (const auto& f : fs) round += time(f);  // warm: primitives, pages
  int reps = std::clamp(static_cast<int>(budget_ms / std::max(round, 1e-3)), 7, 201);
  std::vector<std::vector<double>> t(fs.size());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fs.size(); ++i) t[i].push_back(time(fs[i]));
  std::vector<double> med;
  for (auto& v : t) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

TEST(RouteBench, SoftmaxRoutesByWidth) {
  if (!bench_enabled()) GTEST_SKIP() << "set KILN_ROUTE_BENCH=1";
  const char* rows_env = std::getenv("KILN_ROUTE_BENCH_ROWS");
  const int64_t rows = rows_env ? std::atoll(rows_env) : 64;
  const std::vector<int64_t> widths = {64, 128, 256, 512, 768, 1024, 2048, 4096, 8192, 16384, 32768, 50265};

  // Both strategies of the row kernel at every width, compiled in one batch.
  codegen::cpu::RowEmitOptions per_row, split;
  per_row.split_min_cols = std::numeric_limits<int64_t>::max();
  split.split_min_cols = 1;
  std::vector<Graph> graphs;
  std::vector<schedule::RowGroup> groups;
  std::vector<codegen::cpu::KernelSource> sources;
  for (int64_t w : widths) {
    graphs.push_back(softmax_graph({Dim::fixed(rows), Dim::fixed(w)}));
    auto found = schedule::find_row_groups(graphs.back(), std::vector<char>(graphs.back().nodes.size(), 0));
    ASSERT_EQ(found.size(), 1u);
    groups.push_back(found[0]);
    for (const auto* o : {&per_row, &split}) {
      loops::RowKernel k = found[0].kernel;
      k.name = "bench_" + std::to_string(w) + (o == &split ? "_split" : "_rows");
      sources.push_back(codegen::cpu::emit_row_cpp(k, *o).source);
    }
  }
  Options compile_options = options_with();
  if (const char* dir = std::getenv("KILN_CACHE_DIR")) compile_options.cache_dir = dir;  // reuse across runs
  std::vector<codegen::cpu::CompiledKernel> built = codegen::cpu::compile_kernels(sources, compile_options);

  std::printf("softmax [%lld, w] f32, %d threads; median ms. per-row / split: the fused row kernel forced to that\n"
              "strategy, into a preallocated output; library: the library kernel as a session runs it (output\n"
              "allocated per call); onednn: oneDNN plus the NaN scan into a preallocated output; scan: the NaN\n"
              "scan alone; eager: the node's kernel (output allocated per call)\n",
              static_cast<long long>(rows), omp_get_max_threads());
  std::printf("%7s %9s %9s %9s %9s %9s %9s  %-8s %s\n", "width", "per-row", "split", "library", "onednn", "scan",
              "eager", "fastest", "library impl");
  for (size_t i = 0; i < widths.size(); ++i) {
    const int64_t w = widths[i];
    const Graph& g = graphs[i];
    Tensor x = random_with_specials({rows, w}, static_cast<uint32_t>(w));
    Tensor y = Tensor::empty(DType::f32, {rows, w});
    std::vector<const void*> ins{x.raw()};
    auto* fn_rows = reinterpret_cast<codegen::cpu::RowEntry*>(built[2 * i].entry(sources[2 * i].name));
    auto* fn_split = reinterpret_cast<codegen::cpu::RowEntry*>(built[2 * i + 1].entry(sources[2 * i + 1].name));
    auto lib_groups = schedule::find_library_groups(
        g, std::vector<char>(g.nodes.size(), 0),
        backend::cpu::fusion_target(g, options_with({{"softmax_route", "library"}})));
    ASSERT_EQ(lib_groups.size(), 1u);
    auto lib = backend::cpu::build_library_kernel(g, lib_groups[0], Options{});
    const Node& node = g.nodes[size_t(lib_groups[0].core_node)];
    NodeRunOptions eager;
    std::vector<double> ms = interleaved_medians(
        {[&] { fn_rows(ins.data(), y.raw(), nullptr); }, [&] { fn_split(ins.data(), y.raw(), nullptr); },
         [&] { lib->run({&x}, int64_t{1} << 34); }, [&] { run_node(node, {&x}, eager); },
         [&] { onednn::softmax_f32({rows, w, 1}, false, x.data<float>(), y.data<float>()); },
         [&] { onednn::softmax_nan_rows({rows, w, 1}, x.data<float>(), y.data<float>()); }},
        400.0);
    const char* names[] = {"per-row", "split", "library"};
    size_t best = static_cast<size_t>(std::min_element(ms.begin(), ms.begin() + 3) - ms.begin());
    std::printf("%7lld %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f  %-8s %s\n", static_cast<long long>(w), ms[0], ms[1], ms[2],
                ms[4], ms[5], ms[3], names[best], onednn::softmax_impl_name({rows, w, 1}, false).c_str());
  }
}

}  // namespace
}  // namespace kiln::routing_test
