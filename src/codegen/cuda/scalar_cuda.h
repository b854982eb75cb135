// The CUDA C++ text of scalar IR operations (loops::ScalarExpr), for every CUDA kernel emitter, so that
// an operation means the same thing in each and the same as in the CPU emitter (codegen/cpu/scalar_cpp.h):
//  - every operand is computed for every element (Where computes both branches), so no helper may
//    misbehave: integer x / 0 is 0 and MIN / -1 wraps; a NaN or out-of-range float cast to an integer
//    gives the type's minimum; integer arithmetic wraps;
//  - Max and Min return NaN when either side is NaN (fmaxf / fminf do not), Relu keeps NaN;
//  - one rounding per operation: Mul is __fmul_rn / __dmul_rn, which the compiler never contracts with
//    an Add into an FMA, so results do not depend on --fmad;
//  - math is CUDA's own IEEE functions (expf, logf, erff, tanhf, powf, sqrtf; their maximum errors are in
//    the CUDA C++ Programming Guide's "Mathematical Functions" appendix), never the fast-math intrinsics
//    (__expf, __logf, __fdividef, ...); sigmoid is written from exp(-|x|) <= 1 so that it never overflows.
//  - f16 and bf16 are stored as 16-bit words and computed in float: a load widens (exactly), a store
//    and a Cast to a half type round to nearest even, once (PTX cvt on the device, integer arithmetic in
//    the host emulation, so no cuda_fp16.h is needed; from f64 or an integer through a double rounded
//    to odd);
//    the operations between them are float operations, unrounded (loops/pointwise.h).
// Only text is produced here: nothing includes cuda.h, so this builds on machines without the toolkit.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "loops/pointwise.h"

namespace kiln::codegen::cuda {

// The helpers every generated CUDA kernel uses (kiln_max_nan, kiln_wrap_add, kiln_int_div,
// kiln_float_to_int, kiln_sigmoid, the index helpers kiln_floordiv / kiln_mod / kiln_min / kiln_max).
// Guarded, so that several kernels can share one NVRTC program. Needs no header.
std::string_view cuda_scalar_preamble();
// kiln_grid_prologue(), which every kiln kernel calls before it touches memory (programmatic dependent
// launch; see LaunchConfig::waits_for_prior_grids). Part of cuda_scalar_preamble(); guarded the same way.
std::string_view cuda_grid_prologue();

// The type a value is computed in: float (f32, f16, bf16), double, int, long long, bool; anything else
// is an InternalError (no fusion pass should have made such a kernel).
std::string cuda_type(DType t);
// The element type in memory: bool is kept as bytes (unsigned char) and normalised on load; f16 and
// bf16 as unsigned short.
std::string cuda_storage_type(DType t);
// The stored form of `value` (computed as cuda_type(t)): the half types rounded, others as they are.
std::string cuda_store(DType t, const std::string& value);
// Exact: hex floats for finite values, bit patterns for NaN and the infinities.
std::string cuda_literal(double v, DType t);

// The expression computing `e` (a Unary, Binary, Where or Cast node) from its operands' texts.
std::string cuda_operation(const loops::ScalarExpr& e, const std::vector<std::string>& operands);

// A load of input `input` at `index` (text of a long long expression).
std::string cuda_load(int input, DType dtype, const std::string& index);

}  // namespace kiln::codegen::cuda
