// Shared oneDNN plumbing for the wrappers in this folder: the CPU engine, a stream per thread, a
// thread-safe cache of primitives keyed by shapes and attributes, and per-thread scratchpad memory.
// Not part of the public kernel API (see onednn.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

namespace kiln::onednn::detail {

dnnl::engine& cpu_engine();
// Streams are cheap on CPU; one per calling thread keeps concurrent executions independent.
dnnl::stream& thread_stream();

// Primitives run with scratchpad_mode::user: the library-owned scratchpad of a primitive is shared by
// every execution of it, which would race when two threads run the same cached primitive.
dnnl::primitive_attr user_scratchpad_attr();
// A scratchpad memory for `md` on this thread (grown as needed, valid until the next call here).
dnnl::memory thread_scratchpad(const dnnl::memory::desc& md);
// A 64-byte aligned per-thread buffer of at least `bytes` (slots 0..3 are independent; valid until the
// next request for the same slot on this thread). For reordered copies of operands.
void* thread_buffer(int slot, size_t bytes);

// A reorder (a layout or type change) planned once, run on this thread's stream with a per-thread scratchpad.
class PlannedReorder {
 public:
  PlannedReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
  void run(const dnnl::memory& from, const dnnl::memory& to) const;
  // Into this thread's buffer `slot` (thread_buffer: valid until the next request for that slot here).
  dnnl::memory into_thread_buffer(const dnnl::memory& from, int slot) const;

 private:
  dnnl::reorder prim_;
  dnnl::memory::desc to_, scratch_;
};

// Cache key: a kind tag followed by every shape, stride and attribute value that defines the primitive.
using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const noexcept;
};

// Thread-safe map from Key to an immutable entry. Entries are built outside the lock (creation can
// take milliseconds); when two threads race, the first insertion wins. The cache is bounded: when full
// it is cleared, which only costs re-creation.
template <class Entry>
class PrimitiveCache {
 public:
  std::shared_ptr<const Entry> get(const Key& key, const std::function<std::shared_ptr<const Entry>()>& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = map_.find(key);
      if (it != map_.end()) return it->second;
    }
    std::shared_ptr<const Entry> made = make();
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= kCapacity) map_.clear();
    return map_.emplace(key, std::move(made)).first->second;
  }

 private:
  static constexpr size_t kCapacity = 4096;
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> map_;
};

inline dnnl::memory::dims to_dims(const std::vector<int64_t>& v) { return dnnl::memory::dims(v.begin(), v.end()); }

// `md`'s dims in `type`, the layout left to the primitive (format `any`).
inline dnnl::memory::desc any_layout(const dnnl::memory::desc& md, dnnl::memory::data_type type) {
  return dnnl::memory::desc(md.dims(), type, dnnl::memory::format_tag::any);
}

// Row-major strides of `dims`.
dnnl::memory::dims row_major_strides(const std::vector<int64_t>& dims);

// Plain row-major format tag for a rank (abc..., i.e. nchw-style); used for user-side memory.
dnnl::memory::format_tag plain_tag(int rank);

// oneDNN 2.6's gemm-based matmul ("gemm:jit", what CPUs without AVX-512 get) splits K across threads
// for some shapes, so its bits would follow the thread count (measured on AVX2: the demo's logits
// differ between 1, 2 and 3 threads); its brgemm kernels do not. Such a primitive runs single-threaded:
// kiln's results never depend on the thread count, and the autotuner times it as it runs.
bool splits_reduction_across_threads(const dnnl::primitive_desc_base& pd);
void execute_primitive(const dnnl::primitive& prim, bool single_threaded, const std::unordered_map<int, dnnl::memory>& args);

}  // namespace kiln::onednn::detail
