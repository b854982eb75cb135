// Two kinds of failure: the user's (bad model, bad input, missing library) and kiln's own (a bug).
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace kiln {

// A problem with what the user gave kiln. The CLI prints the message and exits with code 1.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what) : std::runtime_error(what) {}
};

// A bug in kiln: names the pass or component and the node where it was found. Exit code 2.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what) {}
};

template <class... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

template <class... Args>
[[noreturn]] void internal_error(fmt::format_string<Args...> f, Args&&... args) {
  throw InternalError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace kiln

// Checks that report with a formatted message; the condition is evaluated once.
#define KILN_USER_CHECK(cond, ...)                  \
  do {                                              \
    if (!(cond)) ::kiln::user_error(__VA_ARGS__);   \
  } while (0)
#define KILN_INTERNAL_CHECK(cond, ...)                  \
  do {                                                  \
    if (!(cond)) ::kiln::internal_error(__VA_ARGS__);   \
  } while (0)
