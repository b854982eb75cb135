#include "backend/cuda/cubin_info.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// ELF64 little endian, the layout cubins use (elf.h's Elf64_Ehdr / Elf64_Shdr / Elf64_Sym offsets).
constexpr uint32_t kSymtab = 2;
constexpr uint8_t kEiattrFormatSval = 0x04;  // an attribute with a u16 size and a payload
constexpr uint8_t kEiattrFrameSize = 0x11, kEiattrRegcount = 0x2f;

class Reader {
 public:
  explicit Reader(std::span<const char> bytes) : bytes_(bytes) {}
  template <typename T>
  T at(uint64_t offset) const {
    if (offset > bytes_.size() || sizeof(T) > bytes_.size() - offset)
      internal_error("cubin: read of {} bytes at {} past its {} bytes", sizeof(T), offset, bytes_.size());
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  std::string string_at(uint64_t offset) const {
    std::string s;
    for (char c; (c = at<char>(offset)) != '\0'; ++offset) s += c;
    return s;
  }

 private:
  std::span<const char> bytes_;
};

struct Section {
  std::string name;
  uint32_t name_offset = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0, entry_size = 0;
};

std::vector<Section> sections(const Reader& r) {
  if (r.at<uint32_t>(0) != 0x464c457f || r.at<uint8_t>(4) != 2 || r.at<uint8_t>(5) != 1)
    internal_error("cubin: not a little-endian ELF64 image");
  const auto table = r.at<uint64_t>(0x28);
  const auto entry = r.at<uint16_t>(0x3a), count = r.at<uint16_t>(0x3c), names = r.at<uint16_t>(0x3e);
  if (entry < 64 || names >= count) internal_error("cubin: bad section table ({} entries of {} bytes)", count, entry);
  std::vector<Section> out(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = table + i * entry;
    out[i] = {"", r.at<uint32_t>(h), r.at<uint32_t>(h + 4), r.at<uint32_t>(h + 40), r.at<uint64_t>(h + 24),
              r.at<uint64_t>(h + 32), r.at<uint64_t>(h + 56)};
  }
  for (Section& s : out) s.name = r.string_at(out[names].offset + s.name_offset);
  return out;
}

}  // namespace

std::map<std::string, CubinKernelInfo> cubin_kernels(std::span<const char> cubin) {
  const Reader r(cubin);
  const std::vector<Section> all = sections(r);
  std::vector<std::string> symbol_names;  // by symbol index
  for (const Section& s : all) {
    if (s.type != kSymtab) continue;
    if (s.entry_size < 24 || s.link >= all.size()) internal_error("cubin: bad symbol table");
    for (uint64_t at = s.offset; at + s.entry_size <= s.offset + s.size; at += s.entry_size)
      symbol_names.push_back(r.string_at(all[s.link].offset + r.at<uint32_t>(at)));
  }
  std::map<std::string, CubinKernelInfo> kernels;
  for (const Section& s : all) {
    if (s.name.rfind(".text.", 0) == 0) kernels[s.name.substr(6)];
  }
  for (const Section& s : all) {
    if (s.name != ".nv.info") continue;  // the attributes that name their kernel by symbol index
    for (uint64_t at = s.offset; at + 4 <= s.offset + s.size;) {
      const auto format = r.at<uint8_t>(at), attribute = r.at<uint8_t>(at + 1);
      if (format != kEiattrFormatSval) {
        at += 4;
        continue;
      }
      const uint16_t size = r.at<uint16_t>(at + 2);
      if ((attribute == kEiattrRegcount || attribute == kEiattrFrameSize) && size == 8) {
        const uint32_t symbol = r.at<uint32_t>(at + 4);
        const auto value = static_cast<int>(r.at<uint32_t>(at + 8));
        if (symbol >= symbol_names.size()) internal_error("cubin: attribute of symbol {} past the table", symbol);
        CubinKernelInfo& k = kernels[symbol_names[symbol]];
        (attribute == kEiattrRegcount ? k.registers : k.frame_bytes) = value;
      }
      at += 4 + size;
    }
  }
  return kernels;
}

}  // namespace kiln::backend::cuda
