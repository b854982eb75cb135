#include "backend/cuda/cubin_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "backend/cuda/nvrtc.h"
#include "codegen/cpu/content_hash.h"
#include "codegen/cpu/file_io.h"
#include "codegen/cpu/kernel_cache.h"
#include "support/dump.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace fs = std::filesystem;
namespace {

constexpr const char* kMagic = "kiln-cubin-1\n";  // the entry's first bytes; anything else is compiled again

std::string cache_key(const CudaUnit& unit, const std::string& arch) {
  const NvrtcApi& api = nvrtc();
  codegen::cpu::FieldHasher h;
  h.add(unit.code);
  h.add(arch);
  h.add(fmt::format("nvrtc {}.{}", api.major, api.minor));
  for (const std::string& o : nvrtc_options(arch, {})) h.add(o);
  return h.finish().hex();
}

// The cubin stored under `path`, or empty when there is none (or it is not a whole entry).
std::vector<char> read_entry(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string magic(kMagic);
  if (bytes.size() <= magic.size() || bytes.compare(0, magic.size(), magic) != 0) return {};
  return std::vector<char>(bytes.begin() + static_cast<std::ptrdiff_t>(magic.size()), bytes.end());
}

// Written to a private temporary name, then renamed: readers see a whole entry or none.
void write_entry(const fs::path& path, const std::vector<char>& cubin) {
  const fs::path tmp = path.string() + fmt::format(".tmp{}", ::getpid());
  std::string data(kMagic);
  data.append(cubin.data(), cubin.size());
  codegen::cpu::write_file_synced(tmp, data);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    user_error("kernel cache: cannot store {}: {}", path.string(), ec.message());
  }
}

}  // namespace

CubinBatch compile_cubins(const std::vector<CudaUnit>& units, const std::string& arch, const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  CubinBatch batch;
  batch.cubins.resize(units.size());
  const fs::path dir = codegen::cpu::resolve_cache_dir(options) / "cuda";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) user_error("kernel cache: cannot create {}: {}", dir.string(), ec.message());

  // One compile per distinct unit; the others take its cubin.
  std::map<std::string, size_t> first_of;
  std::vector<size_t> todo;
  std::vector<fs::path> paths(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    write_dump(options, "kernels/" + units[i].name + ".cu", units[i].code);
    if (!first_of.emplace(units[i].name, i).second) continue;
    paths[i] = dir / (cache_key(units[i], arch) + ".cubin");
    batch.cubins[i] = read_entry(paths[i]);
    if (batch.cubins[i].empty()) todo.push_back(i);
  }

  const int64_t jobs = options.compile_jobs > 0 ? options.compile_jobs
                                                : std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (size_t t; (t = next.fetch_add(1)) < todo.size();) {
      const size_t i = todo[t];
      try {
        CompiledCubin c = compile_to_cubin(units[i].code, units[i].name + ".cu", arch);
        write_entry(paths[i], c.cubin);
        batch.cubins[i] = std::move(c.cubin);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int64_t k = 1; k < std::min<int64_t>(jobs, static_cast<int64_t>(todo.size())); ++k) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);

  for (size_t i = 0; i < units.size(); ++i)
    if (batch.cubins[i].empty()) batch.cubins[i] = batch.cubins[first_of.at(units[i].name)];
  batch.compiled = static_cast<int>(todo.size());
  batch.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return batch;
}

}  // namespace kiln::backend::cuda
