// Several threads, and several processes, compiling the same kernel at the same time.
#include <barrier>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "codegen/cpu/content_hash.h"
#include "codegen/cpu/file_io.h"
#include "codegen/cpu/kernel_cache.h"
#include "codegen_test_util.h"
#include "common/processes.h"

namespace kiln::codegen::cpu::testing {
namespace {

std::string so_digest(const fs::path& p) {
  ScopedFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  std::optional<FileDigest> d = digest_fd(fd.get());
  return d ? d->hash.hex() : "unreadable";
}

TEST(CompileConcurrency, FourThreadsSameSource) {
  TempDir dir;
  Options o = options_for(dir);
  constexpr int kThreads = 4;
  std::barrier start(kThreads);
  std::vector<std::vector<CompiledKernel>> results(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        results[t] = compile_kernels({add_kernel(51)}, o);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(errors[t], "") << "thread " << t;
    ASSERT_EQ(results[t].size(), 1u);
    EXPECT_EQ(results[t][0].so_path, results[0][0].so_path);
    // One path, loaded once by the dynamic loader: every thread got the same code.
    EXPECT_EQ(results[t][0].entry("add"), results[0][0].entry("add"));
    EXPECT_EQ(reinterpret_cast<IdFn*>(results[t][0].entry("kernel_id"))(), 51);
  }
  KernelCache cache(dir.cache());
  EXPECT_TRUE(cache.lookup(results[0][0].key).has_value());
}

TEST(CompileConcurrency, FourProcessesSameSource) {
  TempDir dir;
  Options o = options_for(dir);
  o.compile_jobs = 1;
  constexpr int kChildren = 4;
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  // All four compile at once, then report what they loaded (a few short lines: the pipe never fills).
  const std::vector<int> statuses = test_common::run_children_together(kChildren, [&](int) {
    ::close(report[0]);
    int code = 0;
    std::string line;
    try {
      std::vector<CompiledKernel> ks = compile_kernels({add_kernel(61)}, o);
      line = so_digest(ks[0].so_path) + " " + (ks[0].library.find_symbol("kernel_id") ? "ok" : "nosym") + "\n";
    } catch (const std::exception& e) {
      line = std::string("error ") + e.what() + "\n";
      code = 1;
    }
    ssize_t written = ::write(report[1], line.data(), line.size());  // one short write: atomic in a pipe
    return written == static_cast<ssize_t>(line.size()) ? code : 2;
  });
  ::close(report[1]);
  for (int status : statuses) EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::string reports;
  ASSERT_TRUE(read_all(report[0], reports));
  ::close(report[0]);

  std::vector<BuiltKernel> now = build_kernels({add_kernel(61)}, o, detect_cpu_features());
  EXPECT_TRUE(now[0].cache_hit);
  std::string expected = so_digest(now[0].so_path) + " ok\n";
  std::string all_expected;
  for (int c = 0; c < kChildren; ++c) all_expected += expected;
  EXPECT_EQ(reports, all_expected);
}

}  // namespace
}  // namespace kiln::codegen::cpu::testing
