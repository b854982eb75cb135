// Forked children that start at the same moment, for tests of several processes sharing a cache or a
// database.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <vector>

namespace kiln::test_common {

// Forks `children` processes; each waits until every one exists, runs body(child index) and exits with
// its return value (3 if it throws). Returns each child's wait status, in child order.
inline std::vector<int> run_children_together(int children, const std::function<int(int)>& body) {
  int go[2];
  if (::pipe(go) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);  // no buffered output printed twice
  std::vector<pid_t> pids;
  for (int c = 0; c < children; ++c) {
    pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid == 0) {
      ::close(go[1]);
      char byte;
      while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {
      }
      int code = 3;
      try {
        code = body(c);
      } catch (...) {
      }
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);  // EOF releases every child at once
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = -1;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    statuses.push_back(status);
  }
  if (static_cast<int>(pids.size()) != children) throw std::runtime_error("fork failed");
  return statuses;
}

}  // namespace kiln::test_common
