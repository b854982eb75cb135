// A vendor library's API, loaded on the first call from any thread: the loader's result, or the user
// error it threw, kept and thrown again on every later call without retrying.
#pragma once
#include <string>
#include <variant>

#include "kiln/errors.h"

namespace kiln::backend::cuda {

// One cache per call site (each lambda is a type of its own): call it from one function per library.
template <class Api, class Load>
const Api& load_once(Load load) {
  static const std::variant<Api, std::string> loaded = [&]() -> std::variant<Api, std::string> {
    try {
      return load();
    } catch (const UserError& e) {
      return std::string(e.what());
    }
  }();
  if (const auto* why = std::get_if<std::string>(&loaded)) throw UserError(*why);
  return std::get<Api>(loaded);
}

// Whether `get` (a load_once call) succeeds; `why` gets the error when it does not.
template <class Get>
bool loads(Get get, std::string* why) {
  try {
    get();
    return true;
  } catch (const UserError& e) {
    if (why) *why = e.what();
    return false;
  }
}

}  // namespace kiln::backend::cuda
