// Processes for tests: a shell command's exit code and output, and forked children that start at the
// same moment (tests of several processes sharing a cache or a database).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::test_common {

struct CommandResult {
  int code;         // the exit code; -1 when it did not exit (a signal)
  std::string out;  // what it wrote on stdout (redirect stderr in the command to have it here too)
};

// Runs `cmd` with /bin/sh and reads its whole output.
inline CommandResult run_command(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed: " + cmd};
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

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
