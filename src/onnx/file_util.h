// Small file helpers for the importer and tensor I/O: bounded reads and atomic writes.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kiln {

// Reads a whole regular file; a missing file, a non-regular file or one larger than max_bytes is a
// user error that names `what` and the path.
std::string read_file_limited(const std::string& path, int64_t max_bytes, std::string_view what);

// Writes the concatenated pieces to a temporary file in the same folder, then renames it over `path`,
// so that readers see the old file or the whole new one, never a partial write.
void write_file_atomic(const std::string& path, std::span<const std::string_view> pieces);

}  // namespace kiln
