// Options: every setting of kiln, declared once in settings.def. Options travel as a value; nothing
// deep inside kiln reads the environment.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct Options {
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help) type name = def;
#include "kiln/settings.def"
#undef KILN_SETTING

  // Defaults overridden by KILN_* environment variables (bad values are user errors).
  static Options from_environment();
  // Sets one setting from text ("name=value" pieces of the CLI's --set); unknown names and values the
  // table does not accept are user errors.
  void set(std::string_view name, std::string_view value);
  // The setting's value as text (as `set` reads it); unknown names are user errors.
  std::string get(std::string_view name) const;
  // True if debug channel `channel` is on (KILN_DEBUG=ir,shapes).
  bool debug_on(std::string_view channel) const;
  // "name=value" for every setting that changes generated code: part of every cache key.
  std::string code_key() const;
};

struct SettingInfo {
  const char* name;
  const char* type;
  const char* env;
  bool affects_code;
  const char* accepted;  // see settings.def
  const char* help;
  std::string default_value;
};
// The table itself, for `kiln settings` and for tests.
const std::vector<SettingInfo>& settings_table();

}  // namespace kiln
