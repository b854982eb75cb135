// Runs a program with an argv vector (no shell) and captures its stdout and stderr together.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kiln::codegen::cpu {

struct ProcessResult {
  int spawn_errno = 0;   // non-zero: the program could not be started (e.g. ENOENT)
  int exit_code = -1;    // exit status when it exited normally, else -1
  int term_signal = 0;   // the signal that ended it, else 0
  std::string output;    // stdout and stderr interleaved, cut at max_output bytes
  bool ok() const { return spawn_errno == 0 && exit_code == 0; }
  // "exit code 1", "killed by signal 9", "could not start: No such file or directory".
  std::string status_text() const;
};

// argv[0] is looked up in PATH unless it contains a '/', like execvp. stdin is /dev/null.
// Safe to call from several threads at once: the pipes are close-on-exec, so no child inherits
// another's pipe.
ProcessResult run_process(const std::vector<std::string>& argv, size_t max_output = size_t{1} << 20);

// The argv as one line a shell would run the same way (for logs and --dump-dir).
std::string shell_quote_command(const std::vector<std::string>& argv);

}  // namespace kiln::codegen::cpu
