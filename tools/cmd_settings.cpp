#include <cstdio>

#include "tools/commands.h"

namespace kiln::tools {

// Every setting with its default, the value this invocation runs with (environment and --set applied),
// the values it accepts and its help.
Command add_settings_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("settings", "list every setting: its environment variable, default, current value, "
                                                 "accepted values and help");
  return {cmd, [](const Options& options) {
    for (const auto& s : settings_table()) {
      const std::string current = options.get(s.name);
      std::printf("%s (%s, %s)%s\n", s.name, s.type, s.env, s.affects_code ? " [changes code]" : "");
      std::printf("    default: '%s'%s%s\n", s.default_value.c_str(),
                  current == s.default_value ? "" : ("   current: '" + current + "'").c_str(),
                  *s.accepted ? (std::string("   accepts ") + s.accepted).c_str() : "");
      std::printf("    %s\n", s.help);
    }
    return 0;
  }};
}

}  // namespace kiln::tools
