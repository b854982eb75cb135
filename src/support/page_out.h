// Giving back the resident pages of memory that is no longer read (a weight whose packed copy replaced it).
#pragma once
#include <cstddef>

namespace kiln {

// Asks Linux to reclaim the pages wholly inside [data, data + bytes), never changing what they read.
// Inside a read-only file mapping noted below the pages are dropped from this process only
// (MADV_DONTNEED: a later read faults them in from the file again, and the file's page cache stays, so
// the next load of the model does not read the disk). Elsewhere MADV_PAGEOUT: anonymous pages go to
// swap where there is one, else stay. Ranges under 64 KiB and kernels without MADV_PAGEOUT (before
// Linux 5.4) are left alone.
void page_out(const void* data, size_t bytes);

// Maps the pages of [data, data + bytes) (part of a file mapping, say) into the process now, in one go,
// rather than one fault at a time when they are first read (MADV_POPULATE_READ, Linux 5.14; on older
// kernels one read a page).
void populate(const void* data, size_t bytes);

// [data, data + bytes) is a PROT_READ, MAP_PRIVATE mapping of a file (ONNX external data, a saved model)
// until forget_file_mapping(data).
void note_file_mapping(const void* data, size_t bytes);
void forget_file_mapping(const void* data);

}  // namespace kiln
