// ONNX's own record of its default-domain operators: the opsets at which each one changed (onnx 1.23,
// opsets 1 to 28), and the version of an operator that a model's opset selects.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

namespace kiln {

struct OnnxOpVersions {
  std::string_view op;
  int versions[10];     // ascending, 0-terminated: the opsets at which the operator changed
  int deprecated_since; // 0 unless ONNX removed the operator at that opset (Upsample, Scatter)
};

// Every default-domain operator of onnx 1.23 (sorted by name).
std::span<const OnnxOpVersions> onnx_op_table();
// The operator's entry, or nullptr when the default domain has no operator of that name.
const OnnxOpVersions* onnx_op_versions(std::string_view op);
// The operator's version in effect at `opset`: the newest version not above it; 0 when the operator
// does not exist yet at that opset or has been removed by then.
int onnx_op_version(const OnnxOpVersions& entry, int64_t opset);

}  // namespace kiln
