// kiln's own CPU GEMM template: C++ source text for a register-blocked, cache-blocked f32 GEMM with a
// fused epilogue, compiled and cached by codegen::cpu like any generated kernel.
//
//   C[b] (M x N, row-major, ldc = N) = epilogue(alpha * op(A[b]) x op(B[b]) + beta * bias[b])
//
// Structure of a generated kernel (see emit_gemm.cpp):
//  * B is packed into panels of nr columns spanning all of K (panel p holds B[:, p*nr .. p*nr+nr),
//    row k at offset k*nr, zero-padded past N), 64-byte aligned. Constant weights are packed once
//    (kiln_gemm_pack_b), otherwise on every call inside the kernel's parallel region, unless the
//    config reads a row-major per-call B in place (pack_b = false, needs N % nr == 0).
//  * The output is cut into macro tiles of at most mc x nc (at run time the tile sizes are evened out
//    so there is no thin last tile, and N is split further when there are fewer than 2 tasks per
//    thread); a tile is one task. Inside a tile: for each K block of kc, for each mr-row micro-panel
//    of A (packed mr-interleaved with zero rows past M, or with pack_a = false read in place from a
//    row-major A when all mr rows exist), for each nr-wide B panel: the micro-kernel keeps the mr x nr
//    accumulators in registers (AVX-512 or AVX2 FMA with broadcast A, written with GCC vector types
//    and FMA builtins; plain C for baseline CPUs). Edge tiles run on a scratch tile.
//  * After a micro-tile's last K block the epilogue runs over it (rows of nr columns in an `omp simd`
//    loop) while it is in L1.
//  * Tasks are ordered in groups of group_m tile rows (all tile columns of a group before the next
//    group), so tiles taken at the same time share B blocks. persistent: one parallel region, thread
//    t takes tiles t, t+T, ...; otherwise `omp for schedule(dynamic, 1)` over the same order.
//  * K is never split between threads: results are bit-identical for any thread count. Each output
//    is one FMA chain over k = 0..K-1 (stored and reloaded exactly between K blocks), so every config
//    of one vector tier gives the same bits too (the tests check both).
//
// Entry points (extern "C"):
//   void kiln_gemm(const float* bias, const float* A, const float* B, float* C, int64_t M,
//                  const void* const* extra, int nthreads)
//       B: the plain B, or with b_constant the packed one. M: the run-time M (ignored when the problem's
//       M is constant). nthreads <= 0: omp_get_max_threads(). All f32 but the extra inputs; C must not
//       overlap A, B, bias or an extra input (pointers are __restrict). Reentrant: any number of calls
//       may run at once (per-call state lives on the stack or in a per-call buffer).
//   int64_t kiln_gemm_packed_b_floats()          size of the packed B (every batch's copy)
//   void kiln_gemm_pack_b(const float* B, float* packed)   packed must be 64-byte aligned
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/cpu_features.h"
#include "kiln/dtype.h"

namespace kiln::templates::gemm {

// Batch stride value meaning "dense": M*K for A, K*N for B, M*N for C and a full bias. With a symbolic M
// this is the only way to give a stride that depends on M.
inline constexpr int64_t kDenseStride = -1;

struct GemmProblem {
  int64_t m = -1;  // -1: symbolic, passed at run time (one compiled kernel serves every M)
  int64_t n = 0, k = 0;
  int64_t batch = 1;  // number of matrices (bmm)
  // Batch strides in elements; 0 = broadcast (the same matrix for every batch); kDenseStride = dense.
  int64_t batch_stride_a = kDenseStride, batch_stride_b = kDenseStride, batch_stride_c = kDenseStride;
  int64_t batch_stride_bias = 0;  // Bias::full only (default: one [M, N] bias for every batch)
  bool trans_a = false;  // A is [K, M] in memory
  bool trans_b = false;  // B is [N, K] in memory
  bool b_constant = false;  // B is packed once ahead of time (kiln_gemm_pack_b)
  // row: [N], broadcast over rows; full: [M, N], batch_stride_bias apart.
  enum class Bias { none, row, full } bias = Bias::none;
  float alpha = 1.f, beta = 1.f;  // v = alpha * acc + beta * bias (beta unused without bias)
};

struct GemmConfig {
  int mr = 6, nr = 64;                    // register micro-tile (nr: a multiple of the vector width)
  int64_t mc = 96, nc = 768, kc = 256;    // cache blocks (mc: multiple of mr, nc: multiple of nr)
  int group_m = 8;                        // tile rows walked before moving right
  bool persistent = true;
  // The pack flags have no effect where they cannot apply (then the kernel packs as usual).
  bool pack_a = true;   // false: full micro-panels of a row-major A are read in place ("_da")
  bool pack_b = true;   // false: a per-call row-major B with N % nr == 0 is read in place ("_db")
  bool prefetch_c = true;  // prefetch the next micro-tile's C rows (name suffix "_nopf" when off)
  // The store hook once per micro-panel row of a tile (mr rows x the tile's columns, "_er") instead of
  // once per micro-tile: longer vector loops, the rows still in L1. No effect without an epilogue.
  bool epilogue_rows = false;
  // EVEN_K is derived (K % kc == 0): the kernel then has no K remainder path.
  std::string name() const;  // e.g. "mr6nr64_mc96_nc768_kc256_g8_p"
  // The config a name() stands for (for configs stored by an autotuner); nullopt for other text.
  static std::optional<GemmConfig> parse(std::string_view name);
  bool operator==(const GemmConfig&) const = default;
};

// Every field of a problem as short stable text (an autotuning key; the epilogue and the CPU are not in
// it), e.g.
// "m-1_n3072_k768_b1_sa-1_sb-1_sc-1_sbias0_nn_const_biasrow_a0x1p+0_b0x1p+0".
std::string problem_key(const GemmProblem& problem);

struct GemmEpilogue {
  std::vector<DType> extra_inputs;  // extra pointers x0, x1, ... (`const void* const* extra`)
  // C++ statements run once per output element after the full K reduction. In scope: float v (alpha *
  // acc + beta * bias already applied), int64_t b, m, n (batch, row, column), int64_t M, N, and the
  // typed pointers x0, x1, ...; the result must be left in v. kiln_erf, kiln_tanh, kiln_exp, ...
  // (vector_math_prelude) and scalar_prelude's helpers are available. Empty: identity.
  std::string body;
};

// Configs worth trying for a problem on a CPU: a handful (exhaustive = false) or a few dozen (true);
// with_epilogue (the kernel has a store hook: bias, alpha or a body) adds epilogue_rows variants.
// Always non-empty; every config is valid for the problem (see valid_config).
std::vector<GemmConfig> config_space(const GemmProblem& problem, const codegen::cpu::CpuFeatures& features,
                                     bool exhaustive, bool with_epilogue = false);

// Whether a kernel for this problem and epilogue runs a store hook (anything besides the bare product).
bool has_store_hook(const GemmProblem& problem, const GemmEpilogue& epilogue);

// The vector width (floats) the kernel uses for `features`: 16, 8 or 1 (baseline).
int vector_floats(const codegen::cpu::CpuFeatures& features);

// Empty when the config can be emitted for the problem and CPU, otherwise why not.
std::string check_config(const GemmProblem& problem, const GemmConfig& config,
                         const codegen::cpu::CpuFeatures& features);

// C++ declarations of the epilogue's typed extra pointers x0, x1, ... from the `const void* const*`
// named `array` (shared by the store hook and the epilogue pass).
std::string extra_input_declarations(const GemmEpilogue& epilogue, std::string_view array);

// The kernel's source (entry points as above). An invalid problem or config is an InternalError.
codegen::cpu::KernelSource emit_gemm(const GemmProblem& problem, const GemmConfig& config,
                                     const GemmEpilogue& epilogue, const codegen::cpu::CpuFeatures& features);

}  // namespace kiln::templates::gemm
