// page_out (src/support/page_out.h): the pages of an mmapped file leave memory and come back unchanged;
// those of a noted file mapping leave this process but stay in the page cache.
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

// The pages of [map, map + bytes) the page cache holds (mincore on a file mapping).
size_t cached_pages(void* map, size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  if (::mincore(map, bytes, in.data()) != 0) return 0;
  return static_cast<size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

TEST(PageOut, ANotedFileMappingLeavesThisProcessButStaysInThePageCache) {
  kiln::test_common::TempDir dir("kiln-page-out-noted");
  const std::string path = (dir.root() / "weights.bin").string();
  const size_t count = size_t{1} << 20;
  {
    std::vector<float> values(count, 3.f);
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(values.data(), sizeof(float), count, f), count);
    std::fflush(f);
    ::fsync(::fileno(f));  // clean pages, as a model's weights are: MADV_PAGEOUT would evict those
    std::fclose(f);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const size_t bytes = count * sizeof(float);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  kiln::note_file_mapping(map, bytes);
  const float* w = static_cast<const float*>(map);
  double sum = 0;
  for (size_t i = 0; i < count; ++i) sum += w[i];
  const size_t before = resident_bytes();
  const size_t cached_before = cached_pages(map, bytes);
  kiln::page_out(map, bytes);
  const size_t after = resident_bytes();
  EXPECT_GT(before - std::min(before, after), bytes * 3 / 4) << "resident " << before << " -> " << after;
  // The next load of the file reads memory, not the disk.
  EXPECT_GE(cached_pages(map, bytes), cached_before * 3 / 4) << "of " << cached_before << " cached pages";
  double again = 0;
  for (size_t i = 0; i < count; ++i) again += w[i];
  EXPECT_EQ(again, sum);
  EXPECT_EQ(sum, 3.0 * static_cast<double>(count));
  kiln::forget_file_mapping(map);
  ::munmap(map, bytes);
}

}  // namespace
