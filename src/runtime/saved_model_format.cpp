#include "runtime/saved_model_format.h"

#include <fmt/format.h>
#include <algorithm>

#include "ir/parser.h"
#include "support/checked_math.h"
#include "support/error.h"
#include "support/hash128.h"

namespace kiln::runtime {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 64 << 20;
constexpr size_t kMaxLayoutBytes = 4096;


bool is_key(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string checksum_of(std::string_view data, const ChecksumHooks& hooks) {
  Hash128 h;
  if (!hooks.before && !hooks.after) {
    h = xxh3_128(data.data(), data.size());
  } else {
    constexpr size_t kChunk = size_t{32} << 20;
    Xxh3Stream stream;
    for (size_t at = 0; at < data.size(); at += kChunk) {
      const std::string_view chunk = data.substr(at, kChunk);
      if (hooks.before) hooks.before(chunk);
      stream.update(chunk.data(), chunk.size());
      if (hooks.after) hooks.after(chunk);
    }
    h = stream.digest();
  }
  return saved_model_trailer(h.high, h.low);
}

const std::string& string_field(const json& h, const char* name, const std::string& what) {
  if (!h.contains(name) || !h[name].is_string()) user_error("{}: the header has no {}", what, name);
  return h[name].get_ref<const std::string&>();
}

}  // namespace

uint64_t saved_model_align(uint64_t v) { return (v + kSavedModelAlign - 1) / kSavedModelAlign * kSavedModelAlign; }

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string saved_model_trailer(uint64_t high, uint64_t low) {
  std::string out;
  put_u64(out, high);
  put_u64(out, low);
  return out;
}

std::string_view saved_model_section(const json& s, std::string_view area, const std::string& what, const std::string& name) {
  if (!s.is_object() || !s.contains("offset") || !s.contains("size") || !s["offset"].is_number_unsigned() ||
      !s["size"].is_number_unsigned())
    user_error("{}: section {} has no offset and size", what, name);
  uint64_t offset = s["offset"].get<uint64_t>(), size = s["size"].get<uint64_t>();
  if (offset % kSavedModelAlign != 0 || offset > area.size() || size > area.size() - offset)
    user_error("{}: section {} (offset {}, {} bytes) lies outside the file's {} section bytes", what, name, offset,
               size, area.size());
  return area.substr(offset, size);
}

std::string_view saved_model_area(std::string_view bytes) {
  uint64_t start = saved_model_align(kSavedModelPrefixBytes + get_u64(bytes.data() + kSavedModelMagic.size()));
  uint64_t end = bytes.size() - kSavedModelTrailerBytes;
  return start <= end ? bytes.substr(start, end - start) : std::string_view{};
}

Graph parse_saved_model_graph(const json& h, std::string_view area, const std::shared_ptr<const void>& owner,
                          const std::string& what) {
  const json& data = h["data"];
  if (!data.is_array()) user_error("{}: the header has no data list", what);
  DataSource source = [&](int64_t index, const TensorType& type) {
    if (index < 0 || static_cast<size_t>(index) >= data.size())
      user_error("no such section (the file has {})", data.size());
    std::string_view bytes = saved_model_section(data[size_t(index)], area, what, fmt::format("data {}", index));
    std::vector<int64_t> shape = static_dims(type.shape);
    int64_t want = checked_mul(checked_numel(shape, "a constant"), int64_t(dtype_size(type.dtype)), "a constant");
    if (static_cast<uint64_t>(want) != bytes.size())
      user_error("{} bytes for a {} constant, which takes {}", bytes.size(), type_string(type), want);
    return Tensor::wrap(type.dtype, shape, owner, const_cast<char*>(bytes.data()));
  };
  return parse_graph(saved_model_section(h["graph"], area, what, "graph"), source);
}


json parse_saved_model_header(std::string_view bytes, bool check_sum, const std::string& what, const ChecksumHooks& hooks) {
  if (bytes.size() < kSavedModelPrefixBytes + kSavedModelTrailerBytes || bytes.substr(0, kSavedModelMagic.size()) != kSavedModelMagic)
    user_error("{}: not a saved kiln model", what);
  if (check_sum &&
      checksum_of(bytes.substr(0, bytes.size() - kSavedModelTrailerBytes), hooks) !=
          bytes.substr(bytes.size() - kSavedModelTrailerBytes))
    user_error("{}: damaged (its checksum does not match its contents); compile the model again", what);
  uint64_t header_bytes = get_u64(bytes.data() + kSavedModelMagic.size());
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - kSavedModelPrefixBytes - kSavedModelTrailerBytes)
    user_error("{}: its header size ({}) does not fit the file", what, header_bytes);
  json h = json::parse(bytes.substr(kSavedModelPrefixBytes, header_bytes), nullptr, /*allow_exceptions=*/false);
  if (!h.is_object()) user_error("{}: its header is not a JSON object", what);
  if (!h.contains("format") || !h["format"].is_number_integer() || h["format"].get<int64_t>() != kSavedModelFormat)
    user_error("{}: saved-model format {} (this kiln reads format {})", what,
               h.contains("format") ? h["format"].dump() : "none", kSavedModelFormat);
  std::string_view area = saved_model_area(bytes);
  saved_model_section(h.value("graph", json()), area, what, "graph");
  if (h.contains("tuning_store")) saved_model_section(h["tuning_store"], area, what, "tuning_store");
  for (const char* list : {"kernels", "data"}) {
    if (!h.contains(list) || !h[list].is_array()) user_error("{}: the header has no {} list", what, list);
    for (size_t i = 0; i < h[list].size(); ++i) saved_model_section(h[list][i], area, what, fmt::format("{} {}", list, i));
  }
  if (h.contains("packs")) {  // weights in their kernels' layouts: {data: index into "data", layout}
    if (!h["packs"].is_array()) user_error("{}: its packs are not a list", what);
    for (size_t i = 0; i < h["packs"].size(); ++i) {
      const json& p = h["packs"][i];
      saved_model_section(p, area, what, fmt::format("packs {}", i));
      if (!p.contains("data") || !p["data"].is_number_unsigned() || p["data"].get<uint64_t>() >= h["data"].size() ||
          !p.contains("layout") || !p["layout"].is_string() || p["layout"].get_ref<const std::string&>().empty() ||
          p["layout"].get_ref<const std::string&>().size() > kMaxLayoutBytes)
        user_error("{}: pack {} names no constant or layout", what, i);
    }
  }
  for (const json& k : h["kernels"])
    if (!k.contains("key") || !k["key"].is_string() || !is_key(k["key"].get<std::string>()) || !k.contains("command") ||
        !k["command"].is_string())
      user_error("{}: a kernel without a valid key and command", what);
  for (const char* name : {"kiln_version", "kiln_commit", "device", "device_key", "cpu_features", "mode"})
    string_field(h, name, what);
  if (!h.contains("settings") || !h["settings"].is_object()) user_error("{}: the header has no settings", what);
  if (!h.contains("dims") || !h["dims"].is_object()) user_error("{}: the header has no dims", what);
  for (const auto& [name, v] : h["dims"].items())
    if (!v.is_number_integer() || v.get<int64_t>() < 0) user_error("{}: dim {} is not a size", what, name);
  if (!h["kernels"].empty() &&
      (!h.contains("compiler") || !h["compiler"].is_object() || !h["compiler"].value("cxx", json()).is_string() ||
       !h["compiler"].value("identity", json()).is_string()))
    user_error("{}: kernels without the compiler identity they were keyed by", what);
  return h;
}

}  // namespace kiln::runtime
