#include "runtime/saved_model.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "autotune/tuning_store.h"
#include "codegen/cpu/cpu_features.h"
#include "codegen/cpu/file_io.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen/cpu/loaded_library.h"
#include "codegen/cpu/toolchain.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln_git.h"
#include "runtime/saved_model_format.h"
#include "support/checked_math.h"
#include "support/error.h"
#include "support/hash128.h"
#include "support/page_out.h"
#include "support/stage_timer.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Settings a load takes from its caller rather than the file: they change what is printed or where
// files go, never what is computed.
constexpr std::array<std::string_view, 5> kCallerSettings = {"debug", "dump_dir", "compile_jobs", "cache_dir",
                                                             "require_cached"};
bool is_caller_setting(std::string_view name) {
  return std::find(kCallerSettings.begin(), kCallerSettings.end(), name) != kCallerSettings.end();
}

std::string read_whole_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("cannot read {}", path.string());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The kernels the file carries: every cache entry this process has loaded, checked against its meta.
struct KernelObject {
  std::string key, command, bytes;
};
std::vector<KernelObject> loaded_kernels(const Options& options) {
  const fs::path dir = codegen::cpu::resolve_cache_dir(options);
  codegen::cpu::KernelCache cache(dir);
  std::vector<KernelObject> out;
  for (const fs::path& so : codegen::cpu::loaded_cache_objects(dir)) {
    std::string key = so.stem().string();
    std::string why;
    std::optional<codegen::cpu::KernelCache::Entry> entry = cache.lookup(key, &why);
    if (!entry) user_error("kernel {} in {} changed while the model was saved ({}); compile it again", key, dir.string(), why);
    out.push_back({key, entry->command, read_whole_file(entry->so_path)});
  }
  return out;
}

// The whole file, mapped read-only; its constants wrap the mapping, as ONNX external data does
// (onnx/external_data.cpp). The checksum maps it in a chunk at a time and lets each chunk go after it
// (load_hooks): what the kernels use later faults back in from the page cache, the rest (the
// originals of packed weights, embedding rows never gathered) stays out of memory. A writable private
// map would copy every page (bert: 540 ms to map and check against 90-130), and a read() into memory
// of its own zeroes every page, then copies (1.6-1.8 s a load).
struct FileBytes {
  void* data = MAP_FAILED;
  size_t size = 0;
  ~FileBytes() {
    if (data == MAP_FAILED) return;
    forget_file_mapping(data);
    ::munmap(data, size);
  }
  std::string_view bytes() const { return {static_cast<const char*>(data), size}; }
};
std::shared_ptr<FileBytes> read_file(const std::string& path) {
  codegen::cpu::ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) user_error("{}: cannot open it ({})", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) user_error("{}: not a regular file", path);
  auto f = std::make_shared<FileBytes>();
  f->size = static_cast<size_t>(st.st_size);
  if (f->size < kSavedModelPrefixBytes + kSavedModelTrailerBytes)
    user_error("{}: {} bytes, too short for a saved model", path, f->size);
  f->data = ::mmap(nullptr, f->size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (f->data == MAP_FAILED) user_error("{}: cannot map it ({})", path, std::strerror(errno));
  note_file_mapping(f->data, f->size);
  return f;
}

ChecksumHooks load_hooks() {
  ChecksumHooks hooks;
  hooks.before = [](std::string_view chunk) { populate(chunk.data(), chunk.size()); };
  hooks.after = [](std::string_view chunk) { page_out(chunk.data(), chunk.size()); };
  return hooks;
}

}  // namespace

bool is_saved_model(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  return f.read(magic, sizeof magic) && std::string_view(magic, sizeof magic) == kSavedModelMagic;
}

TempFolder::TempFolder() {
  std::string pattern = (fs::temp_directory_path() / "kiln-saved-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) user_error("cannot make a folder in {} ({})", pattern, std::strerror(errno));
  path_ = pattern;
}
TempFolder::~TempFolder() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_saved_model(const std::string& path, const Graph& imported, Mode mode, const Options& options,
                       const std::map<std::string, int64_t>& dims, const std::string& device_key,
                       const std::vector<PackRecorder::Entry>& packs) {
  KILN_INTERNAL_CHECK(options.device == "cpu", "write_saved_model: device {} (Session::compile_to_file refuses it)",
                      options.device);
  std::vector<std::pair<uint64_t, std::string_view>> pieces;  // every section at its offset, in file order
  uint64_t area_bytes = 0;
  auto add = [&](std::string_view bytes) {
    area_bytes = saved_model_align(area_bytes);
    json s = {{"offset", area_bytes}, {"size", bytes.size()}};
    pieces.emplace_back(area_bytes, bytes);
    area_bytes += bytes.size();
    return s;
  };

  json data = json::array();
  std::vector<std::string_view> data_pieces;
  std::map<const void*, size_t> data_index;  // a constant's bytes -> its <data N>
  PrintOptions print;
  print.external_data = [&](const Tensor& t) {
    data_pieces.emplace_back(static_cast<const char*>(t.raw()), t.nbytes());
    data_index.emplace(t.raw(), data_pieces.size() - 1);
    return static_cast<int64_t>(data_pieces.size() - 1);
  };
  // The IR text holds no subgraphs that parse back (ir/printer.h): refused here, not when loading.
  for (const Node& n : imported.nodes)
    if (n.op == OpKind::If || n.op == OpKind::Loop || n.op == OpKind::Scan)
      unsupported("{}: a saved model cannot hold {} nodes yet (run the ONNX model instead)", imported.describe(n),
                  op_name(n.op));
  const std::string graph_text = print_graph(imported, print);
  const std::vector<KernelObject> kernels = loaded_kernels(options);
  std::string store;
  const fs::path store_file = codegen::cpu::resolve_cache_dir(options) / autotune::kTuningStoreFileName;
  if (fs::exists(store_file)) {
    TempFolder scratch;
    autotune::snapshot_tuning_store(store_file, scratch.path() / "snapshot.sqlite");
    store = read_whole_file(scratch.path() / "snapshot.sqlite");
  }

  json h;
  h["format"] = kSavedModelFormat;
  h["kiln_version"] = KILN_VERSION;
  h["kiln_commit"] = KILN_GIT_COMMIT;
  h["device"] = options.device;
  h["device_key"] = device_key;
  h["cpu_features"] = codegen::cpu::to_string(codegen::cpu::detect_cpu_features());
  h["mode"] = mode_name(mode);
  h["dims"] = dims;
  json settings = json::object();
  for (const SettingInfo& s : settings_table()) settings[s.name] = options.get(s.name);
  h["settings"] = settings;
  h["graph"] = add(graph_text);
  if (!store.empty()) h["tuning_store"] = add(store);
  if (!kernels.empty()) h["compiler"] = {{"cxx", options.cxx}, {"identity", codegen::cpu::compiler_identity(options.cxx)}};
  h["kernels"] = json::array();
  for (const KernelObject& k : kernels) {
    json s = add(k.bytes);
    s["key"] = k.key;
    s["command"] = k.command;
    h["kernels"].push_back(s);
  }
  for (std::string_view d : data_pieces) data.push_back(add(d));
  h["data"] = data;
  // The packs of the graph's own constants (one a pass made at compile time is made again at load).
  json pack_list = json::array();
  for (const PackRecorder::Entry& p : packs) {
    auto it = data_index.find(p.original);
    if (it == data_index.end()) continue;
    json s = add(std::string_view(static_cast<const char*>(p.copy.data), p.copy.bytes));
    s["data"] = it->second;
    s["layout"] = p.layout;
    pack_list.push_back(s);
  }
  if (!pack_list.empty()) h["packs"] = pack_list;

  const std::string header = h.dump();
  std::string prefix(kSavedModelMagic);
  put_u64(prefix, header.size());
  prefix += header;
  prefix.resize(saved_model_align(prefix.size()), '\0');

  // Written beside the target and renamed over it, so a reader never sees half a file.
  const std::string staged = path + ".partial";
  {
    std::ofstream out(staged, std::ios::binary | std::ios::trunc);
    if (!out) user_error("cannot write {}", staged);
    Xxh3Stream sum;  // the checksum the load verifies (saved_model_format.cpp)
    uint64_t at = 0;  // bytes of the section area written
    auto put = [&](std::string_view bytes) {
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      sum.update(bytes.data(), bytes.size());
    };
    put(prefix);
    for (const auto& [offset, piece] : pieces) {
      put(std::string(offset - at, '\0'));  // the padding up to its aligned offset
      put(piece);
      at = offset + piece.size();
    }
    const Hash128 digest = sum.digest();
    const std::string trailer = saved_model_trailer(digest.high, digest.low);
    out.write(trailer.data(), static_cast<std::streamsize>(trailer.size()));
    out.close();
    if (!out) user_error("cannot write {} (disk full?)", staged);
  }
  std::error_code ec;
  fs::rename(staged, path, ec);
  if (ec) user_error("cannot move {} to {} ({})", staged, path, ec.message());
}

SavedModel read_saved_model(const std::string& path, const Options& user, std::optional<Mode> mode,
                            const std::map<std::string, int64_t>& dims,
                            const std::function<std::string(const Options&, Mode)>& device_key_of) {
  StageTimer timer(user, "map and check the file");
  std::shared_ptr<FileBytes> map = read_file(path);
  const json h = parse_saved_model_header(map->bytes(), /*check_sum=*/true, path, load_hooks());
  timer.next("check the version, settings and machine");
  const std::string& version = h["kiln_version"].get_ref<const std::string&>();
  const std::string& commit = h["kiln_commit"].get_ref<const std::string&>();
  if (version != KILN_VERSION || commit != KILN_GIT_COMMIT)
    user_error("{}: saved by kiln {} (commit {}); this is kiln {} (commit {}): compile the model again with this kiln",
               path, version, commit, KILN_VERSION, KILN_GIT_COMMIT);

  SavedModel m;
  std::optional<Mode> saved_mode = mode_from_name(h["mode"].get_ref<const std::string&>());
  if (!saved_mode) user_error("{}: unknown mode '{}'", path, h["mode"].get<std::string>());
  if (mode && *mode != *saved_mode)
    user_error("{}: compiled in {} mode; a saved model runs in the mode it was compiled in, not {}", path,
               mode_name(*saved_mode), mode_name(*mode));
  m.mode = *saved_mode;
  for (const auto& [name, v] : h["dims"].items()) m.dims[name] = v.get<int64_t>();
  for (const auto& [name, size] : dims) {
    auto it = m.dims.find(name);
    if (it == m.dims.end() || it->second != size)
      user_error("{}: compiled for {}={}; a saved model runs at the sizes it was compiled for", path, name,
                 it == m.dims.end() ? std::string("any size") : std::to_string(it->second));
  }

  // The file's settings, checked one by one by the settings table; the caller's where they are its own.
  const json& settings = h["settings"];
  for (const SettingInfo& s : settings_table()) {
    if (is_caller_setting(s.name)) {
      m.options.set(s.name, user.get(s.name));
      continue;
    }
    if (!settings.contains(s.name) || !settings[s.name].is_string())
      user_error("{}: the file has no value for setting {}", path, s.name);
    const std::string saved = settings[s.name].get<std::string>();
    m.options.set(s.name, saved);
    const std::string mine = user.get(s.name);
    if (mine != saved && mine != s.default_value)
      user_error("{}: compiled with {}={}, and a saved model runs with the settings it was compiled with (this run "
                 "sets {}={}): compile the model again to change it",
                 path, s.name, saved, s.name, mine);
  }
  const std::string here = device_key_of(m.options, m.mode);
  const std::string features = codegen::cpu::to_string(codegen::cpu::detect_cpu_features());
  if (h["device_key"].get_ref<const std::string&>() != here || h["cpu_features"].get_ref<const std::string&>() != features)
    user_error("{}: made for another machine ({}; CPU features {}), this is {} (CPU features {}): compile the "
               "model again here",
               path, h["device_key"].get<std::string>(), h["cpu_features"].get<std::string>(), here, features);

  // The kernels and the store go into a private folder the compile reads as its cache.
  timer.next("unpack kernels and the tuning store");
  m.folder = std::make_shared<TempFolder>();
  const std::string_view area = saved_model_area(map->bytes());
  codegen::cpu::KernelCache cache(m.folder->path(), /*durable=*/false);
  for (const json& k : h["kernels"]) {
    const std::string key = k["key"].get<std::string>();
    const fs::path staging = cache.make_staging_dir(key);
    codegen::cpu::write_private_file(staging / "kernel.so", saved_model_section(k, area, path, "kernel " + key), false);
    cache.publish(key, staging / "kernel.so", k["command"].get<std::string>());
    fs::remove_all(staging);
  }
  if (h.contains("tuning_store"))
    codegen::cpu::write_private_file(m.folder->path() / autotune::kTuningStoreFileName,
                                     saved_model_section(h["tuning_store"], area, path, "tuning_store"), false);
  if (!h["kernels"].empty())
    codegen::cpu::remember_compiler_identity(h["compiler"]["cxx"].get<std::string>(),
                                             h["compiler"]["identity"].get<std::string>());
  m.options.cache_dir = m.folder->path().string();
  m.options.require_cached = true;
  timer.next("parse the graph");
  m.graph = parse_saved_model_graph(h, area, map, path);
  // Each pack is offered for the bytes its constant wraps: the kernels that would pack it adopt it.
  m.packs = std::make_shared<PackOffer>();
  if (h.contains("packs"))
    for (const json& p : h["packs"]) {
      const std::string_view original = saved_model_section(h["data"][p["data"].get<size_t>()], area, path, "data");
      const std::string_view bytes = saved_model_section(p, area, path, "pack");
      m.packs->add(original.data(), p["layout"].get<std::string>(), PackedCopy{bytes.data(), bytes.size(), map});
    }
  return m;
}

}  // namespace kiln::runtime
