// kiln: the command-line tool. User errors exit 1 with a message; internal errors exit 2.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <omp.h>

#include "support/error.h"
#include "tools/cmd_sweep.h"
#include "tools/commands.h"

namespace kiln::tools {

std::pair<std::string, std::string> split_assignment(const std::string& item, const char* flag) {
  size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0) user_error("{} expects NAME=VALUE, got '{}'", flag, item);
  return {item.substr(0, eq), item.substr(eq + 1)};
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> dims;
  for (const auto& item : items) {
    auto [name, value] = split_assignment(item, "--dim");
    char* end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || v < 0) user_error("--dim {}: size must be a non-negative integer", item);
    if (!dims.emplace(name, v).second) user_error("--dim {}: given twice", name);
  }
  return dims;
}

void write_report_file(const std::string& path, const std::string& text) {
  std::filesystem::path part = path;
  part += ".part";
  {
    std::ofstream f(part, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) user_error("cannot write {}", path);
  }
  std::filesystem::rename(part, path);
}

void apply_threads(Options& options, int64_t threads) {
  if (threads < 0) user_error("--threads must be >= 0");
  if (threads > 0) options.threads = threads;
  if (options.threads > 0) omp_set_num_threads(static_cast<int>(options.threads));
}

}  // namespace kiln::tools

int main(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{"kiln: a compiler for machine-learning models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return tools::version_text(); }, "print kiln's version, commit and libraries");
  app.fallthrough();  // --set may come after the subcommand too
  std::vector<std::string> settings;
  app.add_option("--set", settings, "override a setting, NAME=VALUE (see `kiln settings`)");
  std::vector<tools::Command> commands = {tools::add_run_command(app), tools::add_check_command(app),
                                          tools::add_compare_command(app), tools::add_compile_command(app),
                                          tools::add_settings_command(app), tools::add_bench_command(app),
                                          tools::add_profile_command(app), tools::add_sweep_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The pointer to --help only where the command itself was missing or unknown.
    const bool no_command = app.get_subcommands().empty();
    std::fprintf(stderr, "kiln: error: %s%s\n", e.what(), no_command ? " (kiln --help lists the commands)" : "");
    return 1;
  }
  try {
    Options options = Options::from_environment();
    for (const auto& s : settings) {
      auto [name, value] = tools::split_assignment(s, "--set");
      options.set(name, value);
    }
    tools::apply_threads(options, 0);
    for (auto& c : commands)
      if (c.app->parsed()) return c.action(options);
    return 1;
  } catch (const UserError& e) {
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return 1;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "kiln: %s\n(this is a bug in kiln; please report it with the model)\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kiln: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: internal error: unexpected exception: %s\n", e.what());
    return 2;
  }
}
