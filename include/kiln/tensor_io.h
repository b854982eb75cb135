// Tensor files: ONNX TensorProto (.pb, as ONNX test cases store inputs and outputs) and NumPy .npy.
// Readers check every size against the file; writers are atomic (temporary file, then rename).
#pragma once
#include <string>
#include <string_view>

#include "kiln/options.h"
#include "kiln/tensor.h"

namespace kiln {

// Reads a serialized onnx.TensorProto. External data is resolved relative to the file's folder (and
// must stay inside it). If `name` is given it receives the tensor's name (may be empty).
// uint16_as_bf16: onnx 1.12's test generator stores bfloat16 data as UINT16 (bit patterns); the caller
// that knows the value is bf16 (from the model) reads it back as such.
Tensor read_tensor_pb(const std::string& path, const Options& options, std::string* name = nullptr,
                      bool uint16_as_bf16 = false);
// Writes `t` as a TensorProto with raw_data.
void write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name = {});

// Reads a .npy file (format 1.0, 2.0 or 3.0; little-endian <f2 <f4 <f8 <i8 <i4 |i1 |u1 |b1; C order).
// Fortran order, big-endian, object and structured arrays are user errors.
Tensor read_npy(const std::string& path, const Options& options = Options{});
// Parses .npy bytes held in memory; `what` names the source in messages.
Tensor parse_npy(std::string_view bytes, const Options& options, const std::string& what);
// Writes a .npy file (format 1.0, or 2.0 for huge headers). bf16 has no NumPy type: a user error.
void write_npy(const std::string& path, const Tensor& t);
// The header (magic, version, length, dict) that write_npy writes before the data.
std::string npy_header(const Tensor& t);

}  // namespace kiln
