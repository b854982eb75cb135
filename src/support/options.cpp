#include "kiln/options.h"

#include <cstdlib>
#include <charconv>
#include <fmt/format.h>

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

[[maybe_unused]] std::string show(int64_t v) { return std::to_string(v); }
[[maybe_unused]] std::string show(double v) { return fmt::format("{}", v); }
[[maybe_unused]] std::string show(bool v) { return v ? "1" : "0"; }
[[maybe_unused]] std::string show(const std::string& v) { return v; }

}  // namespace

Options Options::from_environment() {
  Options o;
#define KILN_SETTING(name, type, def, env, affects_code, help) \
  if (const char* v = std::getenv(env)) parse_value(#name, v, o.name);
#include "kiln/settings.def"
#undef KILN_SETTING
  return o;
}

void Options::set(std::string_view key, std::string_view value) {
#define KILN_SETTING(name, type, def, env, affects_code, help) \
  if (key == #name) return parse_value(#name, value, name);
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
#define KILN_SETTING(name, type, def, env, affects_code, help) \
  if (affects_code) key += fmt::format("{}={};", #name, show(name));
#include "kiln/settings.def"
#undef KILN_SETTING
  return key;
}

const std::vector<SettingInfo>& settings_table() {
  static const std::vector<SettingInfo> table = {
#define KILN_SETTING(name, type, def, env, affects_code, help) {#name, #type, env, affects_code, help},
#include "kiln/settings.def"
#undef KILN_SETTING
  };
  return table;
}

}  // namespace kiln
