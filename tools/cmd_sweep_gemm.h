// kiln sweep gemm: GFLOP/s of each GEMM choice over shapes (see cmd_sweep_gemm.cpp).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

#include "kiln/options.h"

namespace kiln::tools {

// Registers `gemm` under the `sweep` subcommand; `action` runs it when it was chosen.
CLI::App* add_sweep_gemm(CLI::App* sweep, std::function<int(const Options&)>& action);

}  // namespace kiln::tools
