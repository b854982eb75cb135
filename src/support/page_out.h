// Giving back the resident pages of memory that is no longer read (a weight whose packed copy replaced it).
#pragma once
#include <cstddef>

namespace kiln {

// Asks Linux to reclaim the pages wholly inside [data, data + bytes). Advice only (MADV_PAGEOUT), never
// a change of contents: pages of an mmapped weight file are dropped and read back from the file if
// touched again; anonymous pages go to swap where there is one, else stay. Ranges under 64 KiB and
// kernels without MADV_PAGEOUT (before Linux 5.4) are left alone.
void page_out(const void* data, size_t bytes);

}  // namespace kiln
