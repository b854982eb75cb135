// Tensor: a dense, row-major (contiguous) array with a dtype and a concrete shape. Copies share the
// buffer; clone() copies the data. The buffer may be owned, or borrowed from something that outlives it
// (a mapped weight file, a backend's arena), kept alive by the owner handle, and it lives on a device:
// host memory unless a backend's allocator placed it elsewhere. Element reads (data<T>, as_double,
// clone) are for host tensors only.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/dtype.h"

namespace kiln {

// Where a tensor's buffer lives.
struct Device {
  enum class Kind : uint8_t { host, cuda };
  Kind kind = Kind::host;
  int index = 0;  // which GPU (cuda)
  bool is_host() const { return kind == Kind::host; }
  bool operator==(const Device&) const = default;
};
std::string device_string(const Device& d);  // "host", "cuda:0"

class Tensor {
 public:
  Tensor() = default;
  // Allocates 64-byte aligned storage (zeroed). Size arithmetic is checked.
  static Tensor empty(DType dtype, std::vector<int64_t> shape);
  // Wraps memory kept alive by `owner` (no copy), on `device`.
  static Tensor wrap(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner, void* data,
                     Device device = {});
  template <class T>
  static Tensor from_vector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(DType dtype, T value) { return from_vector<T>(dtype, {}, {value}); }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return data_ != nullptr || numel_ == 0; }
  const Device& device() const { return device_; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }

  Tensor clone() const;
  // Same data, another shape with the same element count.
  Tensor reshaped(std::vector<int64_t> shape) const;
  // Element i converted to double / int64 (any dtype); for small host-side reads (shapes, indices).
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;
  // Every element as int64 (for shape-like inputs).
  std::vector<int64_t> to_int64_vector() const;
  std::string shape_string() const;  // "[1,128,768]"

 private:
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<const void> owner_;
  void* data_ = nullptr;
  Device device_;
};

// Half-precision conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

template <class T>
Tensor Tensor::from_vector(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t = empty(dtype, std::move(shape));
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) {
    double v = static_cast<double>(values[i]);
    switch (dtype) {
      case DType::f32: t.data<float>()[i] = static_cast<float>(v); break;
      case DType::f64: t.data<double>()[i] = v; break;
      case DType::f16: t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
      case DType::bf16: t.data<uint16_t>()[i] = float_to_bf16(static_cast<float>(v)); break;
      case DType::i64: t.data<int64_t>()[i] = static_cast<int64_t>(values[i]); break;
      case DType::i32: t.data<int32_t>()[i] = static_cast<int32_t>(values[i]); break;
      case DType::i8: t.data<int8_t>()[i] = static_cast<int8_t>(values[i]); break;
      case DType::u8: t.data<uint8_t>()[i] = static_cast<uint8_t>(values[i]); break;
      case DType::i16: t.data<int16_t>()[i] = static_cast<int16_t>(values[i]); break;
      case DType::u16: t.data<uint16_t>()[i] = static_cast<uint16_t>(values[i]); break;
      case DType::u32: t.data<uint32_t>()[i] = static_cast<uint32_t>(values[i]); break;
      case DType::u64: t.data<uint64_t>()[i] = static_cast<uint64_t>(values[i]); break;
      case DType::boolean: t.data<bool>()[i] = values[i] != T{}; break;
    }
  }
  return t;
}

}  // namespace kiln
