#include "kiln/options.h"

#include <algorithm>
#include <cstdlib>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.h"

namespace kiln {
namespace {

void parse_value(std::string_view name, std::string_view text, int64_t& out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    user_error("setting {}: '{}' is not an integer", name, text);
  out = v;
}
[[maybe_unused]] void parse_value(std::string_view name, std::string_view text, double& out) {
  char* end = nullptr;
  std::string s(text);
  out = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') user_error("setting {}: '{}' is not a number", name, text);
}
[[maybe_unused]] void parse_value(std::string_view name, std::string_view text, bool& out) {
  if (text == "1" || text == "true" || text == "on") out = true;
  else if (text == "0" || text == "false" || text == "off") out = false;
  else user_error("setting {}: '{}' is not a boolean (1/0, true/false, on/off)", name, text);
}
void parse_value(std::string_view, std::string_view text, std::string& out) { out = std::string(text); }

// The words of an "one of: ..." / "list of: ..." rule.
std::vector<std::string_view> words(std::string_view list) {
  std::vector<std::string_view> out;
  while (!list.empty()) {
    size_t space = list.find(' ');
    if (space != 0) out.push_back(list.substr(0, space));
    if (space == std::string_view::npos) break;
    list.remove_prefix(space + 1);
  }
  return out;
}

// `word` matches `pattern`, where a pattern ending in ":N" takes that prefix and a number.
bool matches(std::string_view word, std::string_view pattern) {
  if (!pattern.ends_with(":N")) return word == pattern;
  std::string_view prefix = pattern.substr(0, pattern.size() - 1);
  if (!word.starts_with(prefix) || word.size() == prefix.size()) return false;
  return std::all_of(word.begin() + prefix.size(), word.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void check_accepted(std::string_view name, std::string_view accepted, const std::string& value) {
  constexpr std::string_view one_of = "one of: ", list_of = "list of: ", nonempty = "nonempty ";
  if (accepted.starts_with(nonempty)) {
    accepted.remove_prefix(nonempty.size());
    if (value.empty())
      user_error("setting {}: needs at least one of {}", name, fmt::join(words(accepted.substr(list_of.size())), ", "));
  }
  if (accepted.starts_with(one_of)) {
    std::vector<std::string_view> allowed = words(accepted.substr(one_of.size()));
    if (std::none_of(allowed.begin(), allowed.end(), [&](std::string_view a) { return matches(value, a); }))
      user_error("setting {}: '{}' is not one of {}", name, value, fmt::join(allowed, ", "));
  } else if (accepted.starts_with(list_of)) {
    std::vector<std::string_view> allowed = words(accepted.substr(list_of.size()));
    std::vector<std::string_view> seen;
    std::string_view rest = value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      if (std::none_of(allowed.begin(), allowed.end(), [&](std::string_view a) { return matches(item, a); }))
        user_error("setting {}: '{}' is not one of {} (in '{}')", name, item, fmt::join(allowed, ", "), value);
      if (std::find(seen.begin(), seen.end(), item) != seen.end())
        user_error("setting {}: '{}' is listed twice in '{}'", name, item, value);
      seen.push_back(item);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
      if (rest.empty()) user_error("setting {}: '{}' ends with a comma", name, value);
    }
  } else {
    KILN_INTERNAL_CHECK(accepted.empty(), "setting {}: rule '{}' is for numbers", name, accepted);
  }
}
template <typename Number>
void check_accepted(std::string_view name, std::string_view accepted, Number value) {
  constexpr std::string_view at_least = "at least ", one_of = "one of: ";
  if (accepted.empty()) return;
  if (accepted.starts_with(one_of)) {
    std::vector<std::string_view> allowed = words(accepted.substr(one_of.size()));
    if (std::none_of(allowed.begin(), allowed.end(), [&](std::string_view a) {
          return static_cast<double>(value) == std::strtod(std::string(a).c_str(), nullptr);
        }))
      user_error("setting {}: {} is not one of {}", name, value, fmt::join(allowed, ", "));
    return;
  }
  KILN_INTERNAL_CHECK(accepted.starts_with(at_least), "setting {}: rule '{}' is not for numbers", name, accepted);
  double bound = std::strtod(std::string(accepted.substr(at_least.size())).c_str(), nullptr);
  // Written so that NaN fails too.
  if (!(static_cast<double>(value) >= bound))
    user_error("setting {}: {} is not a number of at least {}", name, value, accepted.substr(at_least.size()));
}
void check_accepted(std::string_view, std::string_view, bool) {}

// Parses `text` into `out`, then holds it to the table's rule; `out` is left as it was on an error.
template <typename T>
void parse_setting(std::string_view name, std::string_view text, std::string_view accepted, T& out) {
  T v{};
  parse_value(name, text, v);
  check_accepted(name, accepted, v);
  out = std::move(v);
}

[[maybe_unused]] std::string show(int64_t v) { return std::to_string(v); }
[[maybe_unused]] std::string show(double v) { return fmt::format("{}", v); }
[[maybe_unused]] std::string show(bool v) { return v ? "1" : "0"; }
[[maybe_unused]] std::string show(const std::string& v) { return v; }

}  // namespace

Options Options::from_environment() {
  Options o;
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help) \
  if (const char* v = std::getenv(env)) parse_setting(#name, v, accepted, o.name);
#include "kiln/settings.def"
#undef KILN_SETTING
  return o;
}

void Options::set(std::string_view key, std::string_view value) {
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help) \
  if (key == #name) return parse_setting(#name, value, accepted, name);
#include "kiln/settings.def"
#undef KILN_SETTING
  user_error("unknown setting '{}' (kiln settings lists them)", key);
}

std::string Options::get(std::string_view key) const {
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help) \
  if (key == #name) return show(name);
#include "kiln/settings.def"
#undef KILN_SETTING
  user_error("unknown setting '{}' (kiln settings lists them)", key);
}

bool Options::debug_on(std::string_view channel) const {
  std::string_view rest = debug;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (item == channel || item == "all") return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

std::string Options::code_key() const {
  std::string key;
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help) \
  if (affects_code) key += fmt::format("{}={};", #name, show(name));
#include "kiln/settings.def"
#undef KILN_SETTING
  return key;
}

const std::vector<SettingInfo>& settings_table() {
  static const Options defaults;
  static const std::vector<SettingInfo> table = {
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help) \
  {#name, #type, env, affects_code, accepted, help, show(defaults.name)},
#include "kiln/settings.def"
#undef KILN_SETTING
  };
  return table;
}

}  // namespace kiln
