// Conversion between onnx::TensorProto and kiln Tensors, with every size from the file checked.
#pragma once
#include <optional>
#include <string>

#include "kiln/options.h"
#include "kiln/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln {

class ExternalData;

// The kiln dtype for an ONNX TensorProto.DataType code, or nullopt if kiln has none.
std::optional<DType> dtype_from_onnx(int onnx_type);
int dtype_to_onnx(DType t);
// "FLOAT", "STRING", "UINT16", ... ("type 42" for codes ONNX does not define).
std::string onnx_type_name(int onnx_type);
// A checked dtype for `what` (a tensor or value named in the message); string and unsupported types
// are user errors.
DType checked_dtype(int onnx_type, const std::string& what);

// Checks dims (non-negative, rank <= max_rank, numel * element size without overflow and within
// max_tensor_bytes) and returns the byte count.
int64_t checked_tensor_bytes(DType dtype, const std::vector<int64_t>& dims, const Options& options,
                             const std::string& what);

// Converts a TensorProto. `external` resolves data_location == EXTERNAL (nullptr: external data is a
// user error). `what` names the tensor in messages, e.g. "initializer 'w'".
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const Options& options, ExternalData* external,
                         const std::string& what);

// Fills `proto` with the tensor's dtype, dims and raw_data (little-endian, as ONNX stores it).
void tensor_to_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto& proto);

}  // namespace kiln
