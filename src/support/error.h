// Two kinds of failure: the user's (bad model, bad input, missing library) and kiln's own (a bug).
#pragma once
#include <fmt/format.h>
#include <string>

#include "kiln/errors.h"

namespace kiln {

template <class... Args>
[[noreturn]] void user_error(fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(fmt::format(f, std::forward<Args>(args)...));
}

template <class... Args>
[[noreturn]] void unsupported(fmt::format_string<Args...> f, Args&&... args) {
  throw UnsupportedError(fmt::format(f, std::forward<Args>(args)...));
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
