#include "support/page_out.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21  // Linux 5.4; older glibc headers lack the name
#endif

namespace kiln {
namespace {

struct FileMappings {
  std::mutex mutex;
  std::map<uintptr_t, uintptr_t> end_by_begin;
};
FileMappings& file_mappings() {
  static FileMappings* m = new FileMappings;  // built on first use; never destroyed, so unmaps at exit find it
  return *m;
}

bool inside_file_mapping(uintptr_t begin, uintptr_t end) {
  FileMappings& m = file_mappings();
  std::lock_guard lock(m.mutex);
  auto it = m.end_by_begin.upper_bound(begin);
  if (it == m.end_by_begin.begin()) return false;
  --it;
  return it->first <= begin && end <= it->second;
}

}  // namespace

void note_file_mapping(const void* data, size_t bytes) {
  if (!data || bytes == 0) return;
  FileMappings& m = file_mappings();
  std::lock_guard lock(m.mutex);
  m.end_by_begin[reinterpret_cast<uintptr_t>(data)] = reinterpret_cast<uintptr_t>(data) + bytes;
}

void forget_file_mapping(const void* data) {
  FileMappings& m = file_mappings();
  std::lock_guard lock(m.mutex);
  m.end_by_begin.erase(reinterpret_cast<uintptr_t>(data));
}

void page_out(const void* data, size_t bytes) {
  if (!data || bytes < (size_t{64} << 10)) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(page - 1);
  if (end <= begin) return;
  // A private, never written file page reads the same after MADV_DONTNEED; MADV_PAGEOUT would also
  // evict it from the page cache. EINVAL on an old kernel, or on memory that cannot be paged out
  // (locked): nothing to do either way.
  const int advice = inside_file_mapping(begin, end) ? MADV_DONTNEED : MADV_PAGEOUT;
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}

void populate(const void* data, size_t bytes) {
  if (!data || bytes == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
  for (uintptr_t p = reinterpret_cast<uintptr_t>(data); p < end; p = (p & ~(page - 1)) + page)
    (void)*reinterpret_cast<const volatile char*>(p);
}

}  // namespace kiln
