#include "backend/cuda/cubin_info.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// ELF64 little endian, the layout cubins use (elf.h's Elf64_Ehdr / Elf64_Shdr / Elf64_Sym offsets).
constexpr uint32_t kSymtab = 2;
constexpr uint64_t kSymbolSize = 24;  // sizeof(Elf64_Sym)
constexpr uint8_t kEiattrFormatSval = 0x04;  // an attribute with a u16 size and a payload
constexpr uint8_t kEiattrFrameSize = 0x11, kEiattrRegcount = 0x2f;

// Reads little-endian values and NUL-terminated strings inside one span; every read past its end is an
// InternalError (the offsets come from the image itself).
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
  // The bytes [offset, offset + size), which must lie inside.
  Reader part(uint64_t offset, uint64_t size) const {
    if (offset > bytes_.size() || size > bytes_.size() - offset)
      internal_error("cubin: a section of {} bytes at {} past the image's {}", size, offset, bytes_.size());
    return Reader(bytes_.subspan(offset, size));
  }
  uint64_t size() const { return bytes_.size(); }

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
  const Reader headers = r.part(table, uint64_t{count} * entry);
  std::vector<Section> out(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = i * entry;
    out[i] = {"", headers.at<uint32_t>(h), headers.at<uint32_t>(h + 4), headers.at<uint32_t>(h + 40),
              headers.at<uint64_t>(h + 24), headers.at<uint64_t>(h + 32), headers.at<uint64_t>(h + 56)};
  }
  const Reader section_names = r.part(out[names].offset, out[names].size);
  for (Section& s : out) s.name = section_names.string_at(s.name_offset);
  return out;
}

}  // namespace

std::map<std::string, CubinKernelInfo> cubin_kernels(std::span<const char> cubin) {
  const Reader r(cubin);
  const std::vector<Section> all = sections(r);
  std::vector<std::string> symbol_names;  // by symbol index
  for (const Section& s : all) {
    if (s.type != kSymtab) continue;
    if (s.entry_size != kSymbolSize || s.size % kSymbolSize != 0 || s.link >= all.size())
      internal_error("cubin: bad symbol table ({} bytes of {}-byte entries)", s.size, s.entry_size);
    const Reader symbols = r.part(s.offset, s.size), strings = r.part(all[s.link].offset, all[s.link].size);
    for (uint64_t at = 0; at < symbols.size(); at += kSymbolSize) symbol_names.push_back(strings.string_at(symbols.at<uint32_t>(at)));
  }
  // A kernel (an entry function) has its own ".nv.info.<name>" section (its parameters); the attributes
  // also describe device functions that were not inlined (__cuda_sm20_div_s64: a frame, no register
  // count of their own), which are left out.
  std::map<std::string, CubinKernelInfo> kernels;
  for (const Section& s : all) {
    if (s.name.rfind(".nv.info.", 0) == 0) kernels[s.name.substr(9)];
  }
  for (const Section& s : all) {
    if (s.name != ".nv.info") continue;  // the attributes that name their kernel by symbol index
    const Reader info = r.part(s.offset, s.size);
    for (uint64_t at = 0; at + 4 <= info.size();) {
      const auto format = info.at<uint8_t>(at), attribute = info.at<uint8_t>(at + 1);
      if (format != kEiattrFormatSval) {
        at += 4;
        continue;
      }
      const uint16_t size = info.at<uint16_t>(at + 2);
      if ((attribute == kEiattrRegcount || attribute == kEiattrFrameSize) && size == 8) {
        const uint32_t symbol = info.at<uint32_t>(at + 4);
        const auto value = static_cast<int>(info.at<uint32_t>(at + 8));
        if (symbol >= symbol_names.size()) internal_error("cubin: attribute of symbol {} past the table", symbol);
        if (auto k = kernels.find(symbol_names[symbol]); k != kernels.end())
          (attribute == kEiattrRegcount ? k->second.registers : k->second.frame_bytes) = value;
      }
      at += 4 + uint64_t{size};
    }
  }
  return kernels;
}

}  // namespace kiln::backend::cuda
