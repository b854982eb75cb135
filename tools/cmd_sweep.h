// kiln sweep softmax: calibrates the softmax router on this machine (see cmd_sweep.cpp).
#pragma once
#include <CLI/CLI.hpp>

#include "tools/commands.h"

namespace kiln::tools {

Command add_sweep_command(CLI::App& app);

}  // namespace kiln::tools
