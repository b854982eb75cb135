// u8 / i8 x i8 products through oneDNN's matmul primitive: the output scales built in (they are a
// product's constants), the zero point of A a run-time argument.
#include <oneapi/dnnl/dnnl.hpp>

#include <bit>
#include <string_view>

#include "kernels/onednn/onednn.h"
#include "kernels/onednn/runtime.h"
#include "support/error.h"

namespace kiln::onednn {
namespace {

using namespace detail;
using dt = dnnl::memory::data_type;

struct IntegerMatmulEntry {
  bool implemented = false;
  std::string implementation;  // oneDNN's name for it, "refused: " + that where it is not VNNI / AMX
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md, scratch_md, zero_point_md;
};

PrimitiveCache<IntegerMatmulEntry>& integer_matmul_cache() {
  static PrimitiveCache<IntegerMatmulEntry> cache;
  return cache;
}

// VNNI (vpdpbusd) and AMX accumulate u8 x i8 products in i32 without the 16-bit intermediate sums that
// saturate; oneDNN names the ISA in its implementation string.
bool exact_isa(std::string_view implementation) {
  return implementation.find("vnni") != std::string_view::npos || implementation.find("amx") != std::string_view::npos;
}

std::shared_ptr<const IntegerMatmulEntry> make_integer_matmul(const IntegerMatmulDesc& d) {
  auto e = std::make_shared<IntegerMatmulEntry>();
  const MatmulDesc& s = d.shape;
  e->a_md = dnnl::memory::desc(to_dims(s.a_dims), d.a_signed ? dt::s8 : dt::u8, to_dims(s.a_strides));
  e->b_md = dnnl::memory::desc(to_dims(s.b_dims), dt::s8, to_dims(s.b_strides));
  const bool int32_output = d.scales.empty();
  e->c_md = dnnl::memory::desc(to_dims(s.c_dims), int32_output ? dt::s32 : dt::f32, row_major_strides(s.c_dims));
  e->zero_point_md = dnnl::memory::desc({1}, dt::s32, dnnl::memory::format_tag::a);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (!int32_output) attr.set_output_scales(d.scales.size() > 1 ? 1 << (s.c_dims.size() - 1) : 0, d.scales);
  if (d.a_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md), attr, cpu_engine());
    e->implementation = pd.impl_info_str();
    if (!exact_isa(e->implementation)) {
      e->implementation = "refused: " + e->implementation;
      return e;
    }
    e->scratch_md = pd.scratchpad_desc();
    e->prim = dnnl::matmul(pd);
    e->implemented = true;
  } catch (const dnnl::error& err) {
    if (err.status != dnnl_unimplemented) throw;
  }
  return e;
}

std::shared_ptr<const IntegerMatmulEntry> entry(const IntegerMatmulDesc& d) {
  const MatmulDesc& s = d.shape;
  const size_t rank = s.c_dims.size();
  KILN_INTERNAL_CHECK(rank >= 2 && rank <= DNNL_MAX_NDIMS && s.a_dims.size() == rank && s.b_dims.size() == rank &&
                          s.a_strides.size() == rank && s.b_strides.size() == rank,
                      "onednn::matmul_integer: bad rank {}", rank);
  KILN_INTERNAL_CHECK(d.a_signed ? d.a_zero_point >= -128 && d.a_zero_point <= 127 : d.a_zero_point >= 0 && d.a_zero_point <= 255,
                      "onednn::matmul_integer: zero point {} outside A's type", d.a_zero_point);
  KILN_INTERNAL_CHECK(s.a_dims.back() <= kMaxExactIntegerK, "onednn::matmul_integer: K = {} could overflow the i32 sums",
                      s.a_dims.back());
  KILN_INTERNAL_CHECK(d.scales.size() <= 1 || int64_t(d.scales.size()) == s.c_dims.back(),
                      "onednn::matmul_integer: {} scales for {} columns", d.scales.size(), s.c_dims.back());
  Key key;
  key.reserve(4 + 5 * rank + d.scales.size());
  key.push_back(7);  // kind tag: integer matmul
  key.insert(key.end(), {int64_t{d.a_signed}, int64_t{d.a_zero_point != 0}, int64_t(d.scales.size())});
  for (float scale : d.scales) key.push_back(std::bit_cast<int32_t>(scale));
  for (const auto* v : {&s.a_dims, &s.a_strides, &s.b_dims, &s.b_strides, &s.c_dims}) key.insert(key.end(), v->begin(), v->end());
  return integer_matmul_cache().get(key, [&] { return make_integer_matmul(d); });
}

}  // namespace

std::string integer_matmul_implementation(const IntegerMatmulDesc& desc) { return entry(desc)->implementation; }

bool has_exact_integer_matmul() {
  static const bool exact = [] {
    try {
      for (bool a_signed : {false, true}) {  // both activation types the integer_matmuls pass makes
        IntegerMatmulDesc d;
        d.shape = {{4, 64}, {64, 1}, {64, 16}, {16, 1}, {4, 16}};
        d.a_signed = a_signed;
        d.a_zero_point = 1;
        if (!entry(d)->implemented) return false;
      }
      return true;
    } catch (const dnnl::error&) {  // no integer kernel here is a no, never a failed compile
      return false;
    }
  }();
  return exact;
}

bool matmul_integer(const IntegerMatmulDesc& d, const void* a, const int8_t* b, void* c) {
  auto e = entry(d);
  if (!e->implemented) return false;
  const dnnl::engine& eng = cpu_engine();
  int32_t zero_point = d.a_zero_point;
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(e->a_md, eng, const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(e->b_md, eng, const_cast<int8_t*>(b))},
      {DNNL_ARG_DST, dnnl::memory(e->c_md, eng, c)},
      {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}};
  if (d.a_zero_point != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = dnnl::memory(e->zero_point_md, eng, &zero_point);
  // The i32 sums are exact, so the bits do not depend on how oneDNN splits the work between threads.
  execute_primitive(e->prim, false, args);
  return true;
}

}  // namespace kiln::onednn
