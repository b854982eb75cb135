// page_out (src/support/page_out.h): the pages of an mmapped file leave memory and come back unchanged.
#include "support/page_out.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "common/temp_dir.h"

namespace {

// This process's resident memory (/proc/self/statm), in bytes. Not mincore: for a file mapping that
// says whether the page cache holds a page, not whether this process has it mapped.
size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

TEST(PageOut, AMappedFilesPagesLeaveAndComeBackUnchanged) {
  kiln::test_common::TempDir dir("kiln-page-out");
  const std::string path = (dir.root() / "weights.bin").string();
  const size_t count = size_t{1} << 20;  // 4 MiB of floats
  {
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>(i) * 0.5f;
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(values.data(), sizeof(float), count, f), count);
    std::fclose(f);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const size_t bytes = count * sizeof(float);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  const float* w = static_cast<const float*>(map);
  double sum = 0;
  for (size_t i = 0; i < count; ++i) sum += w[i];  // every page read: resident
  if (::madvise(map, bytes, 21 /* MADV_PAGEOUT */) != 0 && errno == EINVAL) {
    ::munmap(map, bytes);
    GTEST_SKIP() << "this kernel has no MADV_PAGEOUT (Linux 5.4)";
  }
  for (size_t i = 0; i < count; ++i) sum -= w[i];  // resident again for page_out itself
  const size_t before = resident_bytes();
  kiln::page_out(map, bytes);
  const size_t after = resident_bytes();
  ASSERT_GT(before, 0u);
  // Most of the 4 MiB leave this process (a page being read back meanwhile may stay).
  EXPECT_GT(before - std::min(before, after), bytes * 3 / 4) << "resident " << before << " -> " << after;
  double again = 0;
  for (size_t i = 0; i < count; ++i) again += w[i] - static_cast<float>(i) * 0.5f;
  EXPECT_EQ(again, 0.0);  // read back from the file, unchanged
  EXPECT_EQ(sum, 0.0);
  // Short or unaligned ranges, and null, are left alone without harm.
  kiln::page_out(w + 1, 100);
  kiln::page_out(nullptr, bytes);
  EXPECT_EQ(w[1], 0.5f);
  ::munmap(map, bytes);
}

}  // namespace
