#include "support/page_out.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21  // Linux 5.4; older glibc headers lack the name
#endif

namespace kiln {

void page_out(const void* data, size_t bytes) {
  if (!data || bytes < (size_t{64} << 10)) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(page - 1);
  if (end <= begin) return;
  // EINVAL on an old kernel, or on memory that cannot be paged out (locked): nothing to do either way.
  (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
}

}  // namespace kiln
