// A shared object opened with dlopen(RTLD_NOW | RTLD_LOCAL) and closed when the last owner goes away.
// Opening the same path twice is fine: the loader counts references and maps it once.
#pragma once
#include <filesystem>
#include <string_view>
#include <vector>

namespace kiln::codegen::cpu {

class LoadedLibrary {
 public:
  LoadedLibrary() = default;
  // Loads `path` (made absolute, so the loader never searches LD_LIBRARY_PATH for it); failure is an
  // InternalError with dlerror's message.
  explicit LoadedLibrary(const std::filesystem::path& path);
  ~LoadedLibrary();
  LoadedLibrary(LoadedLibrary&& other) noexcept;
  LoadedLibrary& operator=(LoadedLibrary&& other) noexcept;
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;

  bool is_open() const { return handle_ != nullptr; }
  const std::filesystem::path& path() const { return path_; }

  // The address of exported symbol `name`; a missing one is an InternalError naming it and the library.
  void* symbol(std::string_view name) const;
  // Same, but nullptr when it is missing.
  void* find_symbol(std::string_view name) const noexcept;

  template <class Fn>
  Fn* function(std::string_view name) const {
    return reinterpret_cast<Fn*>(symbol(name));
  }

 private:
  void close() noexcept;
  void* handle_ = nullptr;
  std::filesystem::path path_;
};

// The shared objects under `dir` (a kernel cache folder) that this process has loaded now, from the
// dynamic loader's own list: what a saved model must carry for a compile that just ran here.
std::vector<std::filesystem::path> loaded_cache_objects(const std::filesystem::path& dir);

}  // namespace kiln::codegen::cpu
