// The exceptions kiln's API throws: the user's problem, a valid model kiln cannot handle, or a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace kiln {

// A problem with what the user gave kiln (bad model, bad input, missing library). The CLI prints
// the message and exits with code 1.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what) : std::runtime_error(what) {}
};

// A valid model that uses something kiln does not implement (an operator, a dtype, a subgraph).
// A UserError, so the CLI treats it alike; `kiln check` counts it as skipped, not failed.
class UnsupportedError : public UserError {
 public:
  explicit UnsupportedError(const std::string& what) : UserError(what) {}
};

// A bug in kiln: names the pass or component and the node where it was found. Exit code 2.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what) {}
};

}  // namespace kiln
