#include "kiln/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "support/checked_math.h"
#include "support/host_blocks.h"

namespace kiln {

Tensor Tensor::empty(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = checked_numel(shape, "tensor");
  t.shape_ = std::move(shape);
  int64_t bytes = checked_mul(t.numel_, static_cast<int64_t>(dtype_size(dtype)), "tensor bytes");
  size_t alloc = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  std::shared_ptr<void> block = support::host_block(alloc);
  if (!block) user_error("out of memory allocating a tensor of {} bytes", bytes);
  std::memset(block.get(), 0, alloc);
  t.data_ = block.get();
  t.owner_ = std::move(block);
  return t;
}

std::string device_string(const Device& d) {
  return d.is_host() ? std::string("host") : fmt::format("cuda:{}", d.index);
}

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner, void* data,
                    Device device) {
  Tensor t;
  t.device_ = device;
  t.dtype_ = dtype;
  t.numel_ = checked_numel(shape, "tensor");
  t.shape_ = std::move(shape);
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::clone() const {
  KILN_INTERNAL_CHECK(device_.is_host(), "clone of a tensor on {}", device_string(device_));
  Tensor t = empty(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor t = *this;
  int64_t n = checked_numel(shape, "reshape");
  if (n != numel_) internal_error("reshaped: {} elements into {}", numel_, n);
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::as_double(int64_t i) const {
  KILN_INTERNAL_CHECK(device_.is_host(), "element read of a tensor on {}", device_string(device_));
  switch (dtype_) {
    case DType::f32: return data<float>()[i];
    case DType::f64: return data<double>()[i];
    case DType::f16: return half_to_float(data<uint16_t>()[i]);
    case DType::bf16: return bf16_to_float(data<uint16_t>()[i]);
    case DType::i64: return static_cast<double>(data<int64_t>()[i]);
    case DType::i32: return data<int32_t>()[i];
    case DType::i8: return data<int8_t>()[i];
    case DType::u8: return data<uint8_t>()[i];
    case DType::i16: return data<int16_t>()[i];
    case DType::u16: return data<uint16_t>()[i];
    case DType::u32: return data<uint32_t>()[i];
    case DType::u64: return static_cast<double>(data<uint64_t>()[i]);
    case DType::boolean: return data<bool>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::as_int64(int64_t i) const {
  switch (dtype_) {
    case DType::i64: return data<int64_t>()[i];
    case DType::i32: return data<int32_t>()[i];
    case DType::i8: return data<int8_t>()[i];
    case DType::u8: return data<uint8_t>()[i];
    case DType::i16: return data<int16_t>()[i];
    case DType::u16: return data<uint16_t>()[i];
    case DType::u32: return data<uint32_t>()[i];
    case DType::u64: {
      const uint64_t v = data<uint64_t>()[i];
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) user_error("value {} does not fit an int64", v);
      return static_cast<int64_t>(v);
    }
    case DType::boolean: return data<bool>()[i] ? 1 : 0;
    default: {
      double d = as_double(i);
      if (!std::isfinite(d) || std::fabs(d) > 9.2e18) user_error("value {} does not fit an integer", d);
      return static_cast<int64_t>(d);
    }
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) v[static_cast<size_t>(i)] = as_int64(i);
  return v;
}

std::string Tensor::shape_string() const { return fmt::format("[{}]", fmt::join(shape_, ",")); }

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) { mant <<= 1; --exp; }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t mant_odd = (absx >> 13) & 1;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent and round to nearest even
  return static_cast<uint16_t>(sign | (absx >> 13));
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace kiln
