#include <cstdio>

#include "tools/commands.h"

namespace kiln::tools {

Command add_settings_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("settings", "list every setting, its environment variable and its help");
  return {cmd, [](const Options&) {
    for (const auto& s : settings_table())
      std::printf("%-22s %-12s %-26s %s%s\n", s.name, s.type, s.env, s.help, s.affects_code ? " [changes code]" : "");
    return 0;
  }};
}

}  // namespace kiln::tools
