// The kiln command's subcommands. Each registers its options on the CLI11 app and runs when chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/options.h"

namespace kiln::tools {

// A subcommand and what to run when it was chosen (returns the exit code).
struct Command {
  CLI::App* app;
  std::function<int(const Options&)> action;
};
Command add_run_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_settings_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_compile_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_profile_command(CLI::App& app);

// `kiln --version`: kiln's version and commit, the libraries it was built with.
std::string version_text();
// "NAME=VALUE" splitting for --dim / --input / --set; a malformed item is a user error.
std::pair<std::string, std::string> split_assignment(const std::string& item, const char* flag);
// --dim SYMBOL=SIZE items; a malformed one is a user error.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& items);
// Applies --threads (0 keeps the default) to OpenMP and the options.
void apply_threads(Options& options, int64_t threads);
// Writes a report (JSON, HTML, trace) through PATH.part renamed into place, so a reader never sees half
// of one; a failure is a user error naming the file.
void write_report_file(const std::string& path, const std::string& text);

}  // namespace kiln::tools
