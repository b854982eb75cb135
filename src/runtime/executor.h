// Runs an Executable: checks the inputs, launches each step's kernel in order into the memory plan's
// arena, frees what no later step reads, and returns the graph outputs. Safe to call from many threads
// at once on one Executable (each run leases its own arena from the pool).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/executable.h"
#include "kiln/session.h"

namespace kiln::runtime {

// A session's run captured as one graph on a device that captures (captured_run.cpp).
struct CapturedRun {
  std::mutex mutex;  // runs take turns: a capture records everything queued on the stream
  int uncaptured_runs = 0;
  int captures = 0;
  std::shared_ptr<void> arena;        // the graph's arena (fixed addresses)
  std::vector<Tensor> inputs;         // its input buffers, in graph input order
  std::vector<Tensor> outputs;        // its output buffers, in graph output order
  std::shared_ptr<const void> graph;  // DeviceRuntime::end_capture's
};

// Arenas of finished runs, reused by the next ones, and the session's captured run.
class ArenaPool {
 public:
  std::shared_ptr<void> take(const compiler::Executable& exe);
  void give_back(std::shared_ptr<void> arena);
  CapturedRun& captured() { return captured_; }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<void>> free_;
  CapturedRun captured_;
};

// `profile` (optional) gets every step's time.
std::map<std::string, Tensor> execute(const compiler::Executable& exe, ArenaPool& arenas,
                                      const std::map<std::string, Tensor>& inputs, const Options& options,
                                      RunProfile* profile);

}  // namespace kiln::runtime
