// External tensor data (TensorProto.data_location == EXTERNAL): files beside the model, mapped once per
// model and shared by every tensor that points into them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln {

class MappedFile;

class ExternalData {
 public:
  // `base_dir`: the folder of the model file; every location must stay inside it.
  explicit ExternalData(std::filesystem::path base_dir);
  ~ExternalData();
  ExternalData(const ExternalData&) = delete;
  ExternalData& operator=(const ExternalData&) = delete;

  // The tensor's bytes (exactly `nbytes` of them) as a tensor of `dtype` and `dims`. Aligned data is
  // wrapped in place (the mapping lives as long as any tensor using it); unaligned data is copied.
  Tensor load(const ::onnx::TensorProto& proto, DType dtype, const std::vector<int64_t>& dims, int64_t nbytes,
              const std::string& what);

 private:
  std::shared_ptr<const MappedFile> map_file(const std::string& location, const std::string& what);

  std::filesystem::path base_dir_;       // as given, for messages
  std::filesystem::path canonical_dir_;  // symlinks resolved, for containment checks
  std::map<std::string, std::shared_ptr<const MappedFile>> files_;  // by canonical path
};

// Checks an external-data location without touching the file system: relative, non-empty, no '..'
// component, no NUL. Exposed for tests.
void check_external_location(const std::string& location, const std::string& what);

}  // namespace kiln
