#include "codegen/cpu/toolchain.h"

#include <atomic>
#include <cctype>
#include <map>
#include <mutex>

#include "codegen/cpu/content_hash.h"
#include "codegen/cpu/subprocess.h"
#include "support/error.h"

namespace kiln::codegen::cpu {
namespace {

std::atomic<uint64_t>& run_counter() {
  static std::atomic<uint64_t> runs{0};
  return runs;
}

}  // namespace

void check_compiler_name(std::string_view cxx) {
  bool ok = !cxx.empty() && cxx.front() != '-';
  for (char c : cxx) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-' ||
                c == '/');
  }
  if (!ok)
    user_error("setting cxx (KILN_CXX): '{}' is not a compiler name or path (only letters, digits and ._+-/ "
               "are allowed; it is run directly, not through a shell)",
               cxx);
}

namespace {
struct Identities {
  std::mutex mutex;
  std::map<std::string, std::string> known;
};
Identities& identities() {
  static Identities ids;  // function-local: built on first use
  return ids;
}
}  // namespace

void remember_compiler_identity(const std::string& cxx, const std::string& identity) {
  check_compiler_name(cxx);
  std::lock_guard lock(identities().mutex);
  identities().known.emplace(cxx, identity);
}

std::string compiler_identity(const std::string& cxx) {
  check_compiler_name(cxx);
  Identities& ids = identities();
  std::lock_guard lock(ids.mutex);  // held while running it, so each compiler runs --version once
  if (auto it = ids.known.find(cxx); it != ids.known.end()) return it->second;
  ProcessResult r = run_process({cxx, "--version"}, 64 << 10);
  if (!r.ok())
    user_error("setting cxx (KILN_CXX): cannot run '{} --version' ({}){}{}", cxx, r.status_text(),
               r.output.empty() ? "" : ":\n", r.output.substr(0, 2000));
  return ids.known[cxx] = hash_bytes(r.output).hex();
}

std::vector<std::string> compile_flags(const CpuFeatures& features) {
  // -fno-math-errno changes no result, only errno (which kernels never read): it lets std::sqrt
  // vectorise.
  std::vector<std::string> flags = {"-O3",           "-std=c++20",       "-fPIC",
                                    "-shared",       "-fopenmp",         "-fno-fast-math",
                                    "-fno-math-errno", "-fvisibility=hidden"};
  for (std::string& f : isa_flags(features)) flags.push_back(std::move(f));
  return flags;
}

std::vector<std::string> compile_argv(const Options& options, const CpuFeatures& features,
                                      const std::string& source_path, const std::string& output_path) {
  check_compiler_name(options.cxx);
  std::vector<std::string> argv = {options.cxx};
  for (std::string& f : compile_flags(features)) argv.push_back(std::move(f));
  argv.insert(argv.end(), {source_path, "-o", output_path});
  return argv;
}

std::string compile_command(const Options& options, const CpuFeatures& features, const std::string& source_path,
                            const std::string& output_path) {
  return shell_quote_command(compile_argv(options, features, source_path, output_path));
}

uint64_t compiler_run_count() { return run_counter().load(); }
void count_compiler_run() { run_counter().fetch_add(1); }

}  // namespace kiln::codegen::cpu
