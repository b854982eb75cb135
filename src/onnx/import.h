// ONNX import: reads a .onnx file (and its external data), checks everything a hostile file could get
// wrong, and builds a kiln Graph in topological order with ops in their canonical form (the newest
// version of each, through the version adapters).
// Types come only from the model's declarations (inputs, outputs, value_info); shape inference is a
// later pass. Every problem with the file is a kiln::UserError.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "kiln/graph.h"
#include "kiln/options.h"

namespace onnx {
class ModelProto;
}

namespace kiln {

// Opsets of the default ONNX domain that kiln reads. From kEveryVersionOpset on, every operator kiln
// has reads every version; below it, a node reads only where its operator's version there has a
// row in version_adapters.cpp (the unary ops, pooling, reductions, ...: versions that mean what the
// newest one does), and any other is refused naming the operator and the version (e.g. Add-6 with
// its broadcast attribute).
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kEveryVersionOpset = 7;
inline constexpr int64_t kMaxOpset = 28;
// ONNX IR versions that kiln reads.
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 14;

// Imports the model at `path`; external data is resolved relative to the file's folder.
Graph import_onnx(const std::string& path, const Options& options);

// Imports a serialized model held in memory; external data is resolved relative to `base_dir`.
Graph import_onnx_bytes(std::string_view bytes, const std::filesystem::path& base_dir, const Options& options);

// Imports an already parsed model (for tests that build models in code).
Graph import_onnx_model(const ::onnx::ModelProto& model, const std::filesystem::path& base_dir,
                        const Options& options);

}  // namespace kiln
