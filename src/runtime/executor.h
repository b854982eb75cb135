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

// Arenas of finished runs, reused by the next ones.
class ArenaPool {
 public:
  std::shared_ptr<void> take(const compiler::Executable& exe);
  void give_back(std::shared_ptr<void> arena);

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<void>> free_;
};

// `profile` (optional) gets every step's time.
std::map<std::string, Tensor> execute(const compiler::Executable& exe, ArenaPool& arenas,
                                      const std::map<std::string, Tensor>& inputs, const Options& options,
                                      RunProfile* profile);

}  // namespace kiln::runtime
