#include "kernels/onednn/runtime.h"

#include <omp.h>

#include <cstdlib>
#include <string>

#include "support/error.h"

namespace kiln::onednn::detail {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
}  // namespace

void* thread_buffer(int slot, size_t bytes) {
  constexpr int kSlots = 5;
  thread_local std::unique_ptr<void, FreeDeleter> buffers[kSlots];
  thread_local size_t capacity[kSlots] = {};
  if (slot < 0 || slot >= kSlots) internal_error("oneDNN thread_buffer: bad slot {}", slot);
  if (bytes > capacity[slot]) {
    size_t rounded = (bytes + 63) / 64 * 64;
    buffers[slot].reset(std::aligned_alloc(64, rounded));
    if (!buffers[slot]) internal_error("oneDNN buffer: cannot allocate {} bytes", rounded);
    capacity[slot] = rounded;
  }
  return buffers[slot].get();
}

dnnl::memory thread_scratchpad(const dnnl::memory::desc& md) {
  size_t need = md.get_size();
  return dnnl::memory(md, cpu_engine(), need ? thread_buffer(4, need) : nullptr);
}

size_t KeyHash::operator()(const Key& k) const noexcept {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the 64-bit words
  for (int64_t v : k) {
    h ^= static_cast<uint64_t>(v);
    h *= 1099511628211ull;
    h ^= h >> 29;
  }
  return static_cast<size_t>(h);
}

dnnl::memory::dims row_major_strides(const std::vector<int64_t>& dims) {
  dnnl::memory::dims s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

dnnl::memory::format_tag plain_tag(int rank) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: internal_error("oneDNN: no plain format tag for rank {}", rank);
  }
}

bool splits_reduction_across_threads(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("gemm", 0) == 0;
}

void execute_primitive(const dnnl::primitive& prim, bool single_threaded, const std::unordered_map<int, dnnl::memory>& args) {
  dnnl::stream& s = thread_stream();
  const int saved = omp_get_max_threads();
  if (single_threaded) omp_set_num_threads(1);  // this thread's setting only; oneDNN reads it per execute
  try {
    prim.execute(s, args);
    s.wait();
  } catch (...) {
    omp_set_num_threads(saved);
    throw;
  }
  omp_set_num_threads(saved);
}

PlannedReorder::PlannedReorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to) : to_(to) {
  const dnnl::engine& eng = cpu_engine();
  dnnl::reorder::primitive_desc pd(eng, from, eng, to, user_scratchpad_attr());
  scratch_ = pd.scratchpad_desc();
  prim_ = dnnl::reorder(pd);
}

void PlannedReorder::run(const dnnl::memory& from, const dnnl::memory& to) const {
  prim_.execute(thread_stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, thread_scratchpad(scratch_)}});
}

dnnl::memory PlannedReorder::into_thread_buffer(const dnnl::memory& from, int slot) const {
  dnnl::memory to(to_, cpu_engine(), thread_buffer(slot, to_.get_size()));
  run(from, to);
  return to;
}

}  // namespace kiln::onednn::detail
