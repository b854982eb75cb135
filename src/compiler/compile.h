// The compiler: a graph and a backend in, an Executable out. compile() is the pass list (compile.cpp,
// on one screen); every pass verifies the IR after it and dumps it on request (KILN_DEBUG=ir,
// --dump-dir), numbered from its place in the list, the fusion plan included.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "backend/backend.h"
#include "compiler/executable.h"
#include "kiln/options.h"
#include "kiln/session.h"

namespace kiln::compiler {

// `mode`: compiled runs the fusion passes on the backend's kernels; eager runs every node on its own;
// reference widens every float to f64 first. `dims` binds symbolic sizes before shape inference.
// Bad models and settings are user errors; a pass that breaks the IR is an internal error naming it.
Executable compile(Graph graph, const backend::Backend& backend, const Options& options, Mode mode,
                   const std::map<std::string, int64_t>& dims = {});

}  // namespace kiln::compiler
