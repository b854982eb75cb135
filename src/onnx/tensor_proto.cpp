#include "onnx/tensor_proto.h"

#include <cstring>
#include <iterator>
#include <onnx/onnx.pb.h>

#include "onnx/external_data.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln {
namespace {

using TP = ::onnx::TensorProto;

// Copies a typed repeated field into the tensor, checking each value fits the element type.
template <class Dst, class Field>
void copy_field(const Field& field, Tensor& t, int64_t lo, int64_t hi, const std::string& what) {
  Dst* out = t.data<Dst>();
  int64_t i = 0;
  for (auto v : field) {
    auto wide = static_cast<int64_t>(v);
    if (wide < lo || wide > hi) user_error("{}: value {} does not fit {}", what, wide, dtype_name(t.dtype()));
    out[i++] = static_cast<Dst>(v);
  }
}

// Which typed field carries a dtype's values in a TensorProto without raw_data.
enum class Field { float_data, double_data, int64_data, int32_data, uint64_data };
Field field_for(DType t) {
  switch (t) {
    case DType::f32: return Field::float_data;
    case DType::f64: return Field::double_data;
    case DType::i64: return Field::int64_data;
    case DType::u32:
    case DType::u64: return Field::uint64_data;
    default: return Field::int32_data;  // i32, i16, u16, i8, u8, bool, and f16/bf16 as 16-bit patterns
  }
}

}  // namespace

std::optional<DType> dtype_from_onnx(int onnx_type) {
  switch (onnx_type) {
    case TP::FLOAT: return DType::f32;
    case TP::UINT8: return DType::u8;
    case TP::INT8: return DType::i8;
    case TP::INT16: return DType::i16;
    case TP::UINT16: return DType::u16;
    case TP::UINT32: return DType::u32;
    case TP::UINT64: return DType::u64;
    case TP::INT32: return DType::i32;
    case TP::INT64: return DType::i64;
    case TP::BOOL: return DType::boolean;
    case TP::FLOAT16: return DType::f16;
    case TP::DOUBLE: return DType::f64;
    case TP::BFLOAT16: return DType::bf16;
    default: return std::nullopt;
  }
}

int dtype_to_onnx(DType t) {
  switch (t) {
    case DType::f32: return TP::FLOAT;
    case DType::f16: return TP::FLOAT16;
    case DType::bf16: return TP::BFLOAT16;
    case DType::f64: return TP::DOUBLE;
    case DType::i64: return TP::INT64;
    case DType::i32: return TP::INT32;
    case DType::i8: return TP::INT8;
    case DType::u8: return TP::UINT8;
    case DType::i16: return TP::INT16;
    case DType::u16: return TP::UINT16;
    case DType::u32: return TP::UINT32;
    case DType::u64: return TP::UINT64;
    case DType::boolean: return TP::BOOL;
  }
  internal_error("dtype_to_onnx: bad dtype {}", static_cast<int>(t));
}

std::string onnx_type_name(int onnx_type) {
  if (TP::DataType_IsValid(onnx_type)) return TP::DataType_Name(static_cast<TP::DataType>(onnx_type));
  // The types that onnx.proto gained after the 1.12 that kiln compiles against (IR 9 to 13).
  static constexpr const char* kNewer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
                                           "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (onnx_type >= 17 && onnx_type < 17 + static_cast<int>(std::size(kNewer))) return kNewer[onnx_type - 17];
  return fmt::format("type {}", onnx_type);
}

DType checked_dtype(int onnx_type, const std::string& what) {
  if (onnx_type == TP::STRING) unsupported("{}: string tensors are not supported", what);
  if (onnx_type == TP::UNDEFINED) user_error("{}: element type is undefined", what);
  auto t = dtype_from_onnx(onnx_type);
  if (!t) unsupported("{}: element type {} is not supported", what, onnx_type_name(onnx_type));
  return *t;
}

int64_t checked_tensor_bytes(DType dtype, const std::vector<int64_t>& dims, const Options& options,
                             const std::string& what) {
  if (static_cast<int64_t>(dims.size()) > options.max_rank)
    user_error("{}: rank {} is over the limit of {} (max_rank)", what, dims.size(), options.max_rank);
  int64_t numel = checked_numel(dims, what);
  int64_t bytes = checked_mul(numel, static_cast<int64_t>(dtype_size(dtype)), what);
  if (bytes > options.max_tensor_bytes)
    user_error("{}: {} bytes is over the limit of {} (max_tensor_bytes)", what, bytes, options.max_tensor_bytes);
  return bytes;
}

Tensor tensor_from_proto(const TP& proto, const Options& options, ExternalData* external, const std::string& what) {
  DType dtype = checked_dtype(proto.data_type(), what);
  if (proto.has_segment()) unsupported("{}: segmented tensors are not supported", what);
  // Check the rank before copying the dims: a hostile file may list millions of them.
  if (proto.dims_size() > options.max_rank)
    user_error("{}: rank {} is over the limit of {} (max_rank)", what, proto.dims_size(), options.max_rank);
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  int64_t nbytes = checked_tensor_bytes(dtype, dims, options, what);
  int64_t numel = checked_numel(dims, what);

  bool has_typed = proto.float_data_size() || proto.int32_data_size() || proto.int64_data_size() ||
                   proto.double_data_size() || proto.uint64_data_size() || proto.string_data_size();
  if (proto.string_data_size()) user_error("{}: string_data is set on a {} tensor", what, dtype_name(dtype));

  if (proto.data_location() == TP::EXTERNAL) {
    if (proto.has_raw_data() || has_typed) user_error("{}: has both external and inline data", what);
    if (!external) user_error("{}: external data is not allowed here", what);
    return external->load(proto, dtype, dims, nbytes, what);
  }

  // Sizes are checked against the data in the file before anything is allocated, so a small file
  // cannot make kiln allocate a large tensor.
  std::string dims_text = fmt::format("[{}]", fmt::join(dims, ","));
  if (proto.has_raw_data()) {
    if (has_typed) user_error("{}: has both raw_data and typed data fields", what);
    const std::string& raw = proto.raw_data();
    if (static_cast<int64_t>(raw.size()) != nbytes)
      user_error("{}: raw_data has {} bytes, but dims {} of {} need {}", what, raw.size(), dims_text,
                 dtype_name(dtype), nbytes);
    Tensor t = Tensor::empty(dtype, dims);
    if (nbytes) std::memcpy(t.raw(), raw.data(), static_cast<size_t>(nbytes));
    if (dtype == DType::boolean) {  // only 0 and 1 are valid bool bytes
      auto* b = static_cast<unsigned char*>(t.raw());
      for (int64_t i = 0; i < nbytes; ++i) b[i] = b[i] ? 1 : 0;
    }
    return t;
  }

  Field want = field_for(dtype);
  int64_t counts[] = {proto.float_data_size(), proto.double_data_size(), proto.int64_data_size(),
                      proto.int32_data_size(), proto.uint64_data_size()};
  for (int f = 0; f < 5; ++f) {
    if (f == static_cast<int>(want)) continue;
    if (counts[f]) user_error("{}: a {} tensor carries data in the wrong typed field", what, dtype_name(dtype));
  }
  int64_t have = counts[static_cast<int>(want)];
  if (have != numel) {
    if (have == 0) user_error("{}: has no data ({} elements expected)", what, numel);
    user_error("{}: has {} values, but dims {} need {}", what, have, dims_text, numel);
  }
  Tensor t = Tensor::empty(dtype, dims);
  if (numel == 0) return t;
  switch (dtype) {
    case DType::f32: std::memcpy(t.raw(), proto.float_data().data(), static_cast<size_t>(nbytes)); break;
    case DType::f64: std::memcpy(t.raw(), proto.double_data().data(), static_cast<size_t>(nbytes)); break;
    case DType::i64: std::memcpy(t.raw(), proto.int64_data().data(), static_cast<size_t>(nbytes)); break;
    case DType::i32: std::memcpy(t.raw(), proto.int32_data().data(), static_cast<size_t>(nbytes)); break;
    case DType::i8: copy_field<int8_t>(proto.int32_data(), t, -128, 127, what); break;
    case DType::u8: copy_field<uint8_t>(proto.int32_data(), t, 0, 255, what); break;
    case DType::i16: copy_field<int16_t>(proto.int32_data(), t, INT16_MIN, INT16_MAX, what); break;
    case DType::u16: copy_field<uint16_t>(proto.int32_data(), t, 0, UINT16_MAX, what); break;
    case DType::u32: {
      uint32_t* out = t.data<uint32_t>();
      int64_t i = 0;
      for (uint64_t v : proto.uint64_data()) {
        if (v > UINT32_MAX) user_error("{}: value {} does not fit u32", what, v);
        out[i++] = static_cast<uint32_t>(v);
      }
      break;
    }
    case DType::u64: std::memcpy(t.raw(), proto.uint64_data().data(), static_cast<size_t>(nbytes)); break;
    case DType::boolean: {
      bool* out = t.data<bool>();
      int64_t i = 0;
      for (int32_t v : proto.int32_data()) out[i++] = v != 0;
      break;
    }
    case DType::f16:
    case DType::bf16: {
      // 16-bit patterns; writers differ on sign extension, so accept both and keep the low 16 bits.
      uint16_t* out = t.data<uint16_t>();
      int64_t i = 0;
      for (int32_t v : proto.int32_data()) {
        if (v < -32768 || v > 65535) user_error("{}: value {} is not a 16-bit pattern", what, v);
        out[i++] = static_cast<uint16_t>(v & 0xffff);
      }
      break;
    }
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, TP& proto) {
  proto.Clear();
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) proto.add_dims(d);
  proto.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

}  // namespace kiln
