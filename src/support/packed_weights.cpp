#include "support/packed_weights.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace kiln {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::pair<const void*, std::string>, PackedCopy> offered;
  std::vector<PackRecorder*> recorders;
  PackCounts counts;
};
Registry& registry() {
  static Registry* r = new Registry;  // built on first use, never destroyed (no order problems at exit)
  return *r;
}

}  // namespace

std::optional<PackedCopy> adopt_offered_pack(const void* original, const std::string& layout, size_t bytes) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.offered.find({original, layout});
  if (it == r.offered.end() || it->second.bytes != bytes) return std::nullopt;
  ++r.counts.adopted;
  return it->second;
}

void record_pack(const void* original, const std::string& layout, const PackedCopy& copy) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  ++r.counts.made;
  for (PackRecorder* rec : r.recorders)
    rec->recorded_.push_back({original, layout, copy.data, copy.bytes, copy.owner});
}

PackCounts pack_counts() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.counts;
}

PackOffer::~PackOffer() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& key : keys_) r.offered.erase(key);
}

void PackOffer::add(const void* original, const std::string& layout, PackedCopy copy) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.offered.emplace(std::make_pair(original, layout), std::move(copy)).second) keys_.emplace_back(original, layout);
}

PackRecorder::PackRecorder() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.recorders.push_back(this);
}

PackRecorder::~PackRecorder() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.recorders.erase(std::remove(r.recorders.begin(), r.recorders.end(), this), r.recorders.end());
}

std::vector<PackRecorder::Entry> PackRecorder::live_packs() const {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<Entry> live;
  for (const Recorded& rec : recorded_) {
    std::shared_ptr<const void> owner = rec.owner.lock();
    if (!owner) continue;
    bool seen = std::any_of(live.begin(), live.end(), [&](const Entry& e) {
      return e.original == rec.original && e.layout == rec.layout;
    });
    if (!seen) live.push_back({rec.original, rec.layout, {rec.data, rec.bytes, std::move(owner)}});
  }
  return live;
}

}  // namespace kiln
