// The table of the importer's version adapters (version_adapters.cpp): one row per version of an
// operator that kiln reads, each with the adapter from the version before.
#pragma once
#include <span>
#include <string_view>
#include <utility>

#include "onnx/graph_reader.h"

namespace kiln {

using StepFn = void (*)(OnnxGraphReader& b, NodeForm& n);

struct VersionStep {
  std::string_view op;
  int version;            // the version this row reads
  StepFn adapt;           // the form of the previous row's version -> this version's; nullptr: the same form
  std::string_view what;  // what changed at this version
};

std::span<const VersionStep> version_steps();
// The oldest and newest version of `op` that kiln reads; {0, 0} when none.
std::pair<int, int> kiln_version_range(std::string_view op);

}  // namespace kiln
