#include "codegen/cpu/compile_kernels.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "codegen/cpu/file_io.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen/cpu/subprocess.h"
#include "codegen/cpu/toolchain.h"
#include "support/error.h"

namespace kiln::codegen::cpu {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMessageLines = 40;
constexpr size_t kMessageChars = 6000;

// The first lines of the compiler's output, for an error message.
std::string first_lines(const std::string& text) {
  size_t end = 0;
  for (size_t line = 0; line < kMessageLines && end < text.size(); ++line) {
    size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
  }
  std::string head = text.substr(0, std::min(end, kMessageChars));
  if (head.size() < text.size()) head += "[...]\n";
  return head;
}

// Removes one compile's staging folder however the compile ends.
struct StagingDir {
  fs::path path;
  ~StagingDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct CompileJob {
  const KernelSource* source = nullptr;
  std::string key;
  BuiltKernel result;
  std::exception_ptr error;
};

void compile_one(const KernelCache& cache, const Options& options, const CpuFeatures& features, CompileJob& job) {
  const KernelSource& src = *job.source;
  StagingDir staging{cache.make_staging_dir(job.key)};
  // The file name is the key, never the random folder, so that every process builds identical bytes
  // (the name ends up in the .so's symbol table).
  fs::path cpp = staging.path / (job.key + ".cpp");
  fs::path so = staging.path / (job.key + ".so");
  write_file_synced(cpp, src.code);
  std::vector<std::string> argv = compile_argv(options, features, cpp.string(), so.string());
  std::string command = shell_quote_command(argv);
  if (options.debug_on("codegen")) fmt::print(stderr, "[codegen] compile {} ({}): {}\n", src.name, job.key, command);

  count_compiler_run();
  ProcessResult r = run_process(argv);
  if (!r.ok()) {
    fs::path kept = cache.keep_failed_source(src.name, job.key, src.code, r.output);
    internal_error("compiling generated kernel '{}' failed ({}):\n{}source kept at {}\ncommand: {}", src.name,
                   r.status_text(), first_lines(r.output), kept.string(), command);
  }
  job.result.so_path = cache.publish(job.key, so, command);
  job.result.command = command;
}

void run_jobs(const KernelCache& cache, const Options& options, const CpuFeatures& features,
              std::vector<CompileJob>& jobs) {
  size_t workers = options.compile_jobs > 0 ? static_cast<size_t>(options.compile_jobs)
                                            : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, jobs.size());
  std::atomic<size_t> next{0};
  // On a terminal, one line that counts the compiles (a cold cache can take tens of seconds); quiet
  // otherwise, so logs and pipes see nothing.
  FILE* progress = ::isatty(STDERR_FILENO) ? stderr : nullptr;
  std::mutex progress_mutex;
  size_t done = 0;
  auto work = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      try {
        compile_one(cache, options, features, jobs[i]);
      } catch (...) {
        jobs[i].error = std::current_exception();
      }
      if (progress) {
        std::lock_guard lock(progress_mutex);
        std::fprintf(progress, "\r[compile] %zu/%zu generated kernels compiled\x1b[K", ++done, jobs.size());
        std::fflush(progress);
      }
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < workers; ++t) threads.emplace_back(work);
    for (std::thread& t : threads) t.join();
  }
  if (progress) {
    std::fputs("\r\x1b[K", progress);
    std::fflush(progress);
  }
  for (CompileJob& job : jobs)
    if (job.error) std::rethrow_exception(job.error);
}

}  // namespace

void* CompiledKernel::entry(std::string_view wanted) const {
  for (size_t i = 0; i < entry_names.size(); ++i)
    if (entry_names[i] == wanted) return entry_points[i];
  internal_error("kernel '{}' has no entry point '{}' among the ones its source listed", name, wanted);
}

std::vector<BuiltKernel> build_kernels(const std::vector<KernelSource>& sources, const Options& options,
                                       const CpuFeatures& features) {
  KILN_USER_CHECK(options.compile_jobs >= 0, "setting compile_jobs (KILN_COMPILE_JOBS): {} is negative",
                  options.compile_jobs);
  CpuFeatures host = detect_cpu_features();
  KILN_INTERNAL_CHECK(features.subset_of(host), "kernels requested for CPU features '{}' but this CPU has '{}'",
                      to_string(features), to_string(host));
  const std::string identity = compiler_identity(options.cxx);
  const std::vector<std::string> flags = compile_flags(features);
  const std::string code_key = options.code_key();
  const bool log = options.debug_on("codegen");
  KernelCache cache(resolve_cache_dir(options));

  std::vector<BuiltKernel> built(sources.size());
  std::vector<CompileJob> jobs;
  std::map<std::string, size_t> first_with_key;  // the same code twice is compiled once
  for (size_t i = 0; i < sources.size(); ++i) {
    built[i].name = sources[i].name;
    built[i].key = kernel_cache_key({sources[i].code, identity, &flags, features, KILN_VERSION, code_key});
    if (!first_with_key.emplace(built[i].key, i).second) continue;
    std::string why;
    if (std::optional<KernelCache::Entry> entry = cache.lookup(built[i].key, &why)) {
      built[i].so_path = entry->so_path;
      built[i].command = entry->command;
      built[i].cache_hit = true;
      if (log) fmt::print(stderr, "[codegen] cache hit {} ({})\n", sources[i].name, built[i].key);
    } else {
      if (log) fmt::print(stderr, "[codegen] cache miss {} ({}): {}\n", sources[i].name, built[i].key, why);
      jobs.push_back({&sources[i], built[i].key, {}, nullptr});
    }
  }

  if (!jobs.empty() && options.require_cached)
    user_error("{} kernel(s) are not in the kernel cache {} and require_cached is on, so nothing is compiled "
               "(first: {}, key {}; a saved model that lacks one was saved by another build)",
               jobs.size(), cache.dir().string(), jobs[0].source->name, jobs[0].key);
  if (!jobs.empty()) run_jobs(cache, options, features, jobs);
  for (CompileJob& job : jobs) {
    BuiltKernel& b = built[first_with_key.at(job.key)];
    b.so_path = job.result.so_path;
    b.command = job.result.command;
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const BuiltKernel& first = built[first_with_key.at(built[i].key)];
    if (&first == &built[i]) continue;
    built[i].so_path = first.so_path;
    built[i].command = first.command;
    built[i].cache_hit = first.cache_hit;
  }
  return built;
}

std::vector<CompiledKernel> compile_kernels(const std::vector<KernelSource>& sources, const Options& options,
                                            const CpuFeatures& features) {
  std::vector<BuiltKernel> built = build_kernels(sources, options, features);
  std::vector<CompiledKernel> kernels(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    CompiledKernel& k = kernels[i];
    static_cast<BuiltKernel&>(k) = std::move(built[i]);
    k.library = LoadedLibrary(k.so_path);
    k.entry_names = sources[i].entry_points;
    for (const std::string& e : k.entry_names) k.entry_points.push_back(k.library.symbol(e));
  }
  return kernels;
}

std::vector<CompiledKernel> compile_kernels(const std::vector<KernelSource>& sources, const Options& options) {
  return compile_kernels(sources, options, detect_cpu_features());
}

}  // namespace kiln::codegen::cpu
