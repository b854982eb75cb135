// TensorProto files.
#include "kiln/tensor_io.h"

#include <climits>
#include <filesystem>
#include <onnx/onnx.pb.h>

#include "onnx/external_data.h"
#include "onnx/file_util.h"
#include "onnx/tensor_proto.h"
#include "support/error.h"

namespace kiln {

Tensor read_tensor_pb(const std::string& path, const Options& options, std::string* name, bool uint16_as_bf16) {
  std::string bytes = read_file_limited(path, options.max_model_bytes, "tensor file");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    user_error("tensor file '{}' is 2 GiB or more; protobuf cannot hold it", path);
  ::onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    user_error("tensor file '{}' is not a valid TensorProto (truncated or corrupt)", path);
  if (!proto.unknown_fields().empty())
    user_error("tensor file '{}' is not a valid TensorProto (unknown fields or trailing garbage)", path);
  bytes.clear();
  bytes.shrink_to_fit();
  if (uint16_as_bf16 && proto.data_type() == ::onnx::TensorProto::UINT16)
    proto.set_data_type(::onnx::TensorProto::BFLOAT16);  // same bits, same int32_data carrier
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  ExternalData external(dir.empty() ? std::filesystem::path(".") : dir);
  Tensor t = tensor_from_proto(proto, options, &external, fmt::format("tensor file '{}'", path));
  if (name) *name = proto.name();
  return t;
}

void write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name) {
  ::onnx::TensorProto proto;
  tensor_to_proto(t, name, proto);
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) user_error("cannot serialize tensor '{}' for '{}'", name, path);
  std::string_view pieces[] = {bytes};
  write_file_atomic(path, pieces);
}

}  // namespace kiln
