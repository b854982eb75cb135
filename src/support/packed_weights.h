// Weights already in a kernel's packed layout, found by the address of the original and the name of
// the layout (a kernel's own: "template <kernel key>", "onednn <memory descriptor>").
//
// A saved model carries the packs its kernels made (runtime/saved_model.cpp) and offers them, mapped
// from its file, while it compiles: a kernel about to pack a constant first asks for an offered pack
// and adopts it instead of packing. While a model is being saved, a PackRecorder sees every pack the
// kernels make; those still alive after the compile (the losers of a tune are gone) are the ones the
// file keeps.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct PackedCopy {
  const void* data = nullptr;
  size_t bytes = 0;
  std::shared_ptr<const void> owner;  // keeps `data` alive
};

// The pack of `original` in `layout`, of `bytes` bytes, that a PackOffer holds now, or nullopt.
std::optional<PackedCopy> adopt_offered_pack(const void* original, const std::string& layout, size_t bytes);

// A kernel packed `original` into `copy` in `layout`: every PackRecorder alive sees it.
void record_pack(const void* original, const std::string& layout, const PackedCopy& copy);

// Packs made (record_pack) and adopted (adopt_offered_pack) in this process so far.
struct PackCounts {
  uint64_t made = 0, adopted = 0;
};
PackCounts pack_counts();

// Offers packs for as long as it lives.
class PackOffer {
 public:
  PackOffer() = default;
  ~PackOffer();
  PackOffer(const PackOffer&) = delete;
  PackOffer& operator=(const PackOffer&) = delete;
  void add(const void* original, const std::string& layout, PackedCopy copy);

 private:
  std::vector<std::pair<const void*, std::string>> keys_;
};

// Sees the packs made while it lives.
class PackRecorder {
 public:
  PackRecorder();
  ~PackRecorder();
  PackRecorder(const PackRecorder&) = delete;
  PackRecorder& operator=(const PackRecorder&) = delete;

  struct Entry {
    const void* original = nullptr;
    std::string layout;
    PackedCopy copy;
  };
  // The packs recorded whose owner is still alive (each once).
  std::vector<Entry> live_packs() const;

  struct Recorded {
    const void* original;
    std::string layout;
    const void* data;
    size_t bytes;
    std::weak_ptr<const void> owner;
  };

 private:
  friend void record_pack(const void*, const std::string&, const PackedCopy&);
  std::vector<Recorded> recorded_;  // under the registry's lock
};

}  // namespace kiln
