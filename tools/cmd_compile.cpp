// kiln compile MODEL.onnx: prepares and compiles a model, filling the kernel cache, without running it;
// with -o FILE.kiln it also writes the compiled model to one file that `kiln run` loads without
// compiling or benchmarking (runtime/saved_model.h).
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "kiln/graph.h"
#include "kiln/session.h"
#include "onnx/import.h"
#include "runtime/inputs.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace {

struct CompileArgs {
  std::string model;
  std::vector<std::string> dims;
  std::string dump_dir;
  std::string output;
  bool explain = false;
};

int run(const CompileArgs& a, Options options) {
  if (!a.dump_dir.empty()) options.dump_dir = a.dump_dir;
  // --explain: the routing decisions and the plan, as KILN_DEBUG=route,fusion prints them.
  if (a.explain) options.debug += options.debug.empty() ? "route,fusion" : ",route,fusion";
  auto start = std::chrono::steady_clock::now();
  Graph graph = import_onnx(a.model, options);
  std::map<std::string, int64_t> dims = parse_dims(a.dims);
  check_dims_known(graph, dims);
  dims = resolve_dims(graph, {}, dims);
  Session session = a.output.empty() ? Session::from_graph(std::move(graph), Mode::compiled, options, dims)
                                     : Session::compile_to_file(std::move(graph), Mode::compiled, options, dims, a.output);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RunStats s = session.stats();
  std::printf("compiled %s in %.1f ms: %d ops, %d kernels per run (%d generated, %d library), %d buffers (%lld "
              "bytes), %lld bytes moved%s%s\n",
              a.model.c_str(), ms, s.ops, s.kernels, s.fused_kernels, s.library_kernels, s.buffers,
              static_cast<long long>(s.arena_bytes), static_cast<long long>(s.bytes_moved),
              options.dump_dir.empty() ? "" : "; dumps in ", options.dump_dir.c_str());
  if (!a.output.empty()) std::printf("saved %s (%lld bytes)\n", a.output.c_str(), static_cast<long long>(std::filesystem::file_size(a.output)));
  if (s.autotuned_ops > 0)
    std::printf("autotune: %d GEMMs, %d benchmarked, %d from the tuning database or by default; %d on kiln's "
                "template, %d on oneDNN, %d on OpenBLAS\n",
                s.autotuned_ops, s.autotune_benchmarks, s.autotuned_ops - s.autotune_benchmarks, s.template_kernels,
                s.autotuned_ops - s.template_kernels - s.blas_kernels, s.blas_kernels);
  return 0;
}

}  // namespace

Command add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  CLI::App* cmd = app.add_subcommand("compile", "compile a model and fill the kernel cache without running it");
  cmd->add_option("model", args->model, "an .onnx file")->required();
  cmd->add_option("--dim", args->dims, "SYMBOL=SIZE for a symbolic dimension (repeatable)");
  cmd->add_option("--dump-dir", args->dump_dir, "write the IR after every step and each generated kernel here");
  cmd->add_option("-o,--output", args->output,
                  "write the compiled model to this file (MODEL.kiln), which kiln run loads without compiling "
                  "(CPU only)");
  cmd->add_flag("--explain", args->explain, "print each routed node (width, route, why) and the plan (steps, buffers)");
  return {cmd, [args](const Options& options) { return run(*args, options); }};
}

}  // namespace kiln::tools
