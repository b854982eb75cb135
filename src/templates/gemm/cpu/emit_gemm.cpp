// Emits the GEMM template's C++ text (the structure is described in gemm_template.h). The micro-kernel
// is written out register by register (acc<r>_<j>), so the compiler has nothing to discover; the rest
// is plain loops over compile-time constants (N, K, blocks) and the run-time M.
#include <fmt/format.h>

#include "codegen/cpu/scalar_cpp.h"
#include "codegen/cpu/toolchain.h"
#include "codegen/cpu/vector_math.h"
#include "support/error.h"
#include "templates/gemm/cpu/gemm_template.h"

namespace kiln::templates::gemm {

using codegen::cpu::CpuFeatures;
using codegen::cpu::KernelSource;

namespace {

// The vector operations the micro-kernel uses, as GCC vector types and FMA builtins rather than
// <immintrin.h>: parsing that header is two thirds of a kernel's compile time (0.27 of 0.42 s).
struct VectorIsa {
  const char *type, *zero, *loadu, *storeu, *set1, *fma;
};
constexpr VectorIsa kVectorOps{"kiln_v", "kiln_v{}", "kiln_vload", "kiln_vstore", "kiln_vset1", "kiln_vfma"};

std::string vector_prelude(int floats) {
  std::string set1;
  for (int i = 0; i < floats; ++i) set1 += i ? ", s" : "s";
  return fmt::format(
      "typedef float kiln_v __attribute__((vector_size({0})));\n"
      "typedef float kiln_vu __attribute__((vector_size({0}), aligned(4), __may_alias__));\n"
      "static inline kiln_v kiln_vload(const float* p) {{ return *reinterpret_cast<const kiln_vu*>(p); }}\n"
      "static inline void kiln_vstore(float* p, kiln_v v) {{ *reinterpret_cast<kiln_vu*>(p) = v; }}\n"
      "static inline kiln_v kiln_vset1(float s) {{ return kiln_v{{{1}}}; }}\n"
      "static inline kiln_v kiln_vfma(kiln_v a, kiln_v b, kiln_v c) {{ return {2}; }}\n\n",
      floats * 4, set1,
      floats == 16 ? "__builtin_ia32_vfmaddps512_mask(a, b, c, static_cast<unsigned short>(-1), 4)"
                   : "__builtin_ia32_vfmaddps256(a, b, c)");
}

// The mr x nr register tile: C (ldc) = (first ? 0 : C) + A panel x B panel over kb steps.
std::string vector_micro_kernel(const GemmConfig& c, int floats) {
  const VectorIsa& isa = kVectorOps;
  const int nv = c.nr / floats;
  std::string s =
      "// The register tile: c[0..MR) x [0..NR) (row stride ldc) = (first ? 0 : c) + sum_k A[:, k] x bp[k], with\n"
      "// A[r, k] at ap[r * RS + k * KS] (packed: RS = 1, KS = MR; row-major A read in place: RS = K, KS = 1).\n"
      "// B[k, j] at bp[k * BS + j] (packed panel: BS = NR; row-major B read in place: BS = N).\n"
      "template <int64_t RS, int64_t KS, int64_t BS>\n"
      "static inline void micro(const int64_t kb, const float* __restrict ap, const float* __restrict bp,\n"
      "                         float* __restrict c, const int64_t ldc, const bool first) {\n";
  for (int r = 0; r < c.mr; ++r) {
    s += fmt::format("  {} ", isa.type);
    for (int j = 0; j < nv; ++j) s += fmt::format("{}acc{}_{}", j ? ", " : "", r, j);
    s += ";\n";
  }
  s += "  if (first) {\n";
  for (int r = 0; r < c.mr; ++r)
    for (int j = 0; j < nv; ++j) s += fmt::format("    acc{}_{} = {};\n", r, j, isa.zero);
  s += "  } else {\n";
  for (int r = 0; r < c.mr; ++r)
    for (int j = 0; j < nv; ++j)
      s += fmt::format("    acc{0}_{1} = {2}(c + {0} * ldc + {3});\n", r, j, isa.loadu, j * floats);
  s += "  }\n#pragma GCC unroll 4\n  for (int64_t k = 0; k < kb; ++k) {\n";
  s += "    const float* __restrict bk = bp + k * BS;\n    const float* __restrict ak = ap + k * KS;\n";
  for (int j = 0; j < nv; ++j)
    s += fmt::format("    const {} b{} = {}(bk + {});\n", isa.type, j, isa.loadu, j * floats);
  for (int r = 0; r < c.mr; ++r) {
    s += fmt::format("    {{\n      const {} a = {}(ak[{} * RS]);\n", isa.type, isa.set1, r);
    for (int j = 0; j < nv; ++j) s += fmt::format("      acc{0}_{1} = {2}(a, b{1}, acc{0}_{1});\n", r, j, isa.fma);
    s += "    }\n";
  }
  s += "  }\n";
  for (int r = 0; r < c.mr; ++r)
    for (int j = 0; j < nv; ++j)
      s += fmt::format("  {0}(c + {1} * ldc + {2}, acc{1}_{3});\n", isa.storeu, r, j * floats, j);
  s += "}\n\n";
  return s;
}

// Baseline CPUs: the same contract in plain C (the compiler vectorises the column loop with SSE2).
std::string scalar_micro_kernel() {
  return R"(template <int64_t RS, int64_t KS, int64_t BS>
static inline void micro(const int64_t kb, const float* __restrict ap, const float* __restrict bp,
                         float* __restrict c, const int64_t ldc, const bool first) {
  float acc[MR][NR];
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t j = 0; j < NR; ++j) acc[r][j] = first ? 0.0f : c[r * ldc + j];
  for (int64_t k = 0; k < kb; ++k)
    for (int64_t r = 0; r < MR; ++r) {
      const float a = ap[r * RS + k * KS];
#pragma omp simd
      for (int64_t j = 0; j < NR; ++j) acc[r][j] += a * bp[k * BS + j];
    }
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t j = 0; j < NR; ++j) c[r * ldc + j] = acc[r][j];
}

)";
}

std::string f32_literal(float v) { return codegen::cpu::literal(static_cast<double>(v), DType::f32); }

// B read in place (no per-call packing): a row-major per-call B whose columns split into whole panels.
bool direct_b(const GemmProblem& p, const GemmConfig& c) {
  return !c.pack_b && !p.b_constant && !p.trans_b && p.n % c.nr == 0;
}

}  // namespace

std::string extra_input_declarations(const GemmEpilogue& e, std::string_view array) {
  std::string s;
  for (size_t i = 0; i < e.extra_inputs.size(); ++i) {
    DType t = e.extra_inputs[i];
    std::string ct = t == DType::boolean ? "uint8_t" : codegen::cpu::c_type(t);
    s += fmt::format("  [[maybe_unused]] const {0}* __restrict x{1} = static_cast<const {0}*>({2}[{1}]);\n", ct, i, array);
  }
  return s;
}

namespace {

// Applies bias, alpha/beta and the body to the finished micro-tile rows [i0, i0+mv) x [j0, j0+nv).
std::string epilogue_function(const GemmProblem& p, const GemmEpilogue& e) {
  std::string s =
      "// The store hook: runs once per output element after its full K sum, while the tile is in L1.\n"
      "static inline void epilogue_tile(const Ctx& x, const int64_t b, const int64_t i0, const int64_t mv,\n"
      "                                 const int64_t j0, const int64_t nv) {\n"
      "  [[maybe_unused]] const int64_t M = x.M;\n"
      "  float* __restrict Cb = x.C + b * x.sc;\n";
  s += extra_input_declarations(e, "x.extra");
  if (p.bias == GemmProblem::Bias::row) s += "  const float* __restrict bias = x.bias;\n";
  if (p.bias == GemmProblem::Bias::full) s += "  const float* __restrict bias = x.bias + b * x.sbias;\n";
  std::string v = p.alpha == 1.f ? "crow[n]" : fmt::format("{} * crow[n]", f32_literal(p.alpha));
  std::string beta = p.beta == 1.f ? "" : fmt::format("{} * ", f32_literal(p.beta));
  if (p.bias == GemmProblem::Bias::row) v += fmt::format(" + {}bias[n]", beta);
  if (p.bias == GemmProblem::Bias::full) v += fmt::format(" + {}bias[m * N + n]", beta);
  s += "  for (int64_t m = i0; m < i0 + mv; ++m) {\n"
       "    float* __restrict crow = Cb + m * N;\n"
       "#pragma omp simd\n"
       "    for (int64_t n = j0; n < j0 + nv; ++n) {\n";
  s += fmt::format("      float v = {};\n", v);
  if (!e.body.empty()) s += "      {\n" + e.body + "\n      }\n";
  s += "      crow[n] = v;\n    }\n  }\n}\n\n";
  return s;
}

// out[j][i] = in[i][j] for an 8 x 8 block (rows lds / ldd floats apart): three rounds of interleaving
// rows i and i+4 (the perfect shuffle, applied log2(8) times, transposes). GCC vector shuffles, so the
// compiler picks the instructions for the tier (one vpermt2ps each with AVX-512VL).
constexpr const char* kTranspose8 = R"(typedef float kiln_v8 __attribute__((vector_size(32)));
typedef float kiln_v8u __attribute__((vector_size(32), aligned(4), __may_alias__));
typedef int kiln_i8 __attribute__((vector_size(32)));
#if defined(__clang__)
static inline kiln_v8 kiln_lo8(kiln_v8 x, kiln_v8 y) {
  return __builtin_shufflevector(x, y, 0, 8, 1, 9, 2, 10, 3, 11);
}
static inline kiln_v8 kiln_hi8(kiln_v8 x, kiln_v8 y) {
  return __builtin_shufflevector(x, y, 4, 12, 5, 13, 6, 14, 7, 15);
}
#else
static inline kiln_v8 kiln_lo8(kiln_v8 x, kiln_v8 y) {
  return __builtin_shuffle(x, y, kiln_i8{0, 8, 1, 9, 2, 10, 3, 11});
}
static inline kiln_v8 kiln_hi8(kiln_v8 x, kiln_v8 y) {
  return __builtin_shuffle(x, y, kiln_i8{4, 12, 5, 13, 6, 14, 7, 15});
}
#endif
static inline void kiln_transpose8(const float* __restrict in, const int64_t lds, float* __restrict out,
                                   const int64_t ldd) {
  kiln_v8 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = *reinterpret_cast<const kiln_v8u*>(in + i * lds);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = kiln_lo8(r[i], r[i + 4]);
      t[2 * i + 1] = kiln_hi8(r[i], r[i + 4]);
    }
    for (int i = 0; i < 8; ++i) r[i] = t[i];
  }
  for (int i = 0; i < 8; ++i) *reinterpret_cast<kiln_v8u*>(out + i * ldd) = r[i];
}

)";

std::string pack_functions(const GemmProblem& p) {
  std::string s;
  if (p.trans_b) s += kTranspose8;
  s += "// Panel p of B: columns [p*NR, p*NR+NR) as K rows of NR floats, zero past N.\n"
       "static void pack_panel(const float* __restrict B, float* __restrict dst, const int64_t p) {\n"
       "  const int64_t n0 = p * NR;\n"
       "  const int64_t nv = N - n0 < NR ? N - n0 : NR;\n";
  if (!p.trans_b)
    s += "  for (int64_t k = 0; k < K; ++k) {\n"
         "    const float* __restrict src = B + k * N + n0;\n"
         "    float* __restrict d = dst + k * NR;\n"
         "    for (int64_t j = 0; j < nv; ++j) d[j] = src[j];\n"
         "    for (int64_t j = nv; j < NR; ++j) d[j] = 0.0f;\n"
         "  }\n}\n\n";
  else  // B is [N, K]: 8 x 8 blocks transposed in registers, scalar copies at the edges
    s += "  const int64_t k8 = K / 8 * 8;\n"
         "  for (int64_t j = 0; j < NR; j += 8) {\n"
         "    const int64_t jv = nv - j < 8 ? (nv - j > 0 ? nv - j : 0) : 8;\n"
         "    int64_t k = 0;\n"
         "    if (jv == 8)\n"
         "      for (; k < k8; k += 8) kiln_transpose8(B + (n0 + j) * K + k, K, dst + k * NR + j, NR);\n"
         "    for (int64_t kk = k; kk < K; ++kk)\n"
         "      for (int64_t jj = 0; jj < 8; ++jj)\n"
         "        dst[kk * NR + j + jj] = jj < jv ? B[(n0 + j + jj) * K + kk] : 0.0f;\n"
         "  }\n}\n\n";
  s += "// Rows [i0, i0+mv) and columns [pc, pc+kb) of A as kb groups of MR floats, zero rows past mv.\n"
       "static inline void pack_a(const float* __restrict A, const int64_t M, const int64_t i0, const int64_t mv,\n"
       "                          const int64_t pc, const int64_t kb, float* __restrict ap) {\n";
  if (!p.trans_a)
    s += "  (void)M;\n"
         "  for (int64_t r = 0; r < mv; ++r) {\n"
         "    const float* __restrict src = A + (i0 + r) * K + pc;\n"
         "    for (int64_t k = 0; k < kb; ++k) ap[k * MR + r] = src[k];\n"
         "  }\n";
  else
    s += "  for (int64_t k = 0; k < kb; ++k) {\n"
         "    const float* __restrict src = A + (pc + k) * M + i0;\n"
         "    for (int64_t r = 0; r < mv; ++r) ap[k * MR + r] = src[r];\n"
         "  }\n";
  s += "  for (int64_t r = mv; r < MR; ++r)\n"
       "    for (int64_t k = 0; k < kb; ++k) ap[k * MR + r] = 0.0f;\n}\n\n";
  return s;
}

// One macro tile: every K block, every A micro-panel, every B panel; the epilogue after the last block
// (per micro-tile, or with epilogue_rows per micro-panel row across the tile).
std::string tile_function(bool identity_epilogue, bool epilogue_rows) {
  std::string s = R"(static void run_tile(const Ctx& x, const int64_t b, const int64_t tm, const int64_t tn) {
  const int64_t M = x.M;
  // Tile tm holds micro-panel rows [tm * units_m / tiles_m, (tm+1) * units_m / tiles_m): heights differ
  // by at most one micro-panel. Columns likewise in whole B panels.
  const int64_t m0 = tm * x.units_m / x.tiles_m * MR, m1_full = (tm + 1) * x.units_m / x.tiles_m * MR;
  const int64_t n0 = tn * NPANELS / x.tiles_n * NR, n1_full = (tn + 1) * NPANELS / x.tiles_n * NR;
  const int64_t m1 = m1_full < M ? m1_full : M, n1 = n1_full < N ? n1_full : N;
  const float* __restrict Ab = x.A + b * x.sa;
  float* __restrict Cb = x.C + b * x.sc;
  const float* __restrict Bp = DIRECT_B ? x.Bp + b * x.sb : x.Bp + (B_COPIES == 1 ? 0 : b) * (NPANELS * PANEL);
  alignas(64) float ap[MR * (KC > 0 ? KC : 1)];
  alignas(64) float scratch[MR * NR] = {};
  for (int64_t kbi = 0; kbi < NKB; ++kbi) {
    const int64_t pc = kbi * KC;
    const int64_t kb = EVEN_K ? KC : (K - pc < KC ? K - pc : KC);
    const bool first = kbi == 0;
    [[maybe_unused]] const bool last = kbi == NKB - 1;
    for (int64_t i0 = m0; i0 < m1; i0 += MR) {
      const int64_t mv = m1 - i0 < MR ? m1 - i0 : MR;
      // Full micro-panels of a row-major A are read in place (DIRECT_A); others are packed.
      const bool direct = DIRECT_A && mv == MR;
      if (!direct) pack_a(Ab, M, i0, mv, pc, kb, ap);
      [[maybe_unused]] const float* a_rows = Ab + i0 * K + pc;
      for (int64_t j0 = n0; j0 < n1; j0 += NR) {
        const int64_t nv = n1 - j0 < NR ? n1 - j0 : NR;
        const float* bp = DIRECT_B ? Bp + pc * N + j0 : Bp + (j0 / NR) * PANEL + pc * NR;
        float* c = Cb + i0 * N + j0;
        if (PREFETCH_C && j0 + NR < n1)  // the next tile's C lines, while this one computes
          for (int64_t r = 0; r < mv; ++r)
            for (int64_t l = 0; l < NR; l += 16) __builtin_prefetch(c + r * N + NR + l, 1, 3);
        auto kernel = [&](float* out, const int64_t ldc) {
          if constexpr (DIRECT_A)
            if (direct) return micro<K, 1, BS>(kb, a_rows, bp, out, ldc, first);
          micro<1, MR, BS>(kb, ap, bp, out, ldc, first);
        };
        if (mv == MR && nv == NR) {
          kernel(c, N);
        } else {  // edge tile: through the scratch tile
          if (!first)
            for (int64_t r = 0; r < mv; ++r)
              for (int64_t j = 0; j < nv; ++j) scratch[r * NR + j] = c[r * N + j];
          kernel(scratch, NR);
          for (int64_t r = 0; r < mv; ++r)
            for (int64_t j = 0; j < nv; ++j) c[r * N + j] = scratch[r * NR + j];
        }
)";
  if (!identity_epilogue && !epilogue_rows) s += "        if (last) epilogue_tile(x, b, i0, mv, j0, nv);\n";
  s += "      }\n";
  if (!identity_epilogue && epilogue_rows) s += "      if (last) epilogue_tile(x, b, i0, mv, n0, n1 - n0);\n";
  s += "    }\n  }\n}\n\n";
  return s;
}

// Task t in grouped order: GROUP_M tile rows, all their tile columns, then the next rows.
constexpr const char* kRunTask = R"(static inline void run_task(const Ctx& x, const int64_t t, const int64_t tiles_m,
                            const int64_t tiles_n) {
  const int64_t per_batch = tiles_m * tiles_n;
  const int64_t b = t / per_batch, r = t % per_batch;
  const int64_t in_group = GROUP_M * tiles_n;
  const int64_t first_m = (r / in_group) * GROUP_M;
  const int64_t group_rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
  const int64_t tm = first_m + (r % in_group) % group_rows;
  const int64_t tn = (r % in_group) / group_rows;
  run_tile(x, b, tm, tn);
}

)";

}  // namespace

KernelSource emit_gemm(const GemmProblem& p, const GemmConfig& c, const GemmEpilogue& e, const CpuFeatures& features) {
  std::string why = check_config(p, c, features);
  KILN_INTERNAL_CHECK(why.empty(), "emit_gemm: {}", why);
  const int vf = vector_floats(features);
  const bool identity = !has_store_hook(p, e);
  const int64_t b_copies = p.batch_stride_b == 0 ? 1 : p.batch;

  std::string code(codegen::cpu::kKernelExportPrelude);
  code += fmt::format("// GEMM template {}, generated by kiln.\n", c.name());
  code += "#include <cstddef>\n#include <cstdint>\n#include <new>\n#include <omp.h>\n";

  if (!e.body.empty()) {
    code += codegen::cpu::scalar_prelude();
    code += codegen::cpu::vector_math_prelude();
  }
  code += fmt::format(
      "\nstatic constexpr int64_t MR = {}, NR = {}, MC = {}, NC = {}, KC = {}, GROUP_M = {};\n"
      "static constexpr int64_t KM = {}, N = {}, K = {}, BATCH = {}, B_COPIES = {};\n"
      "static constexpr int64_t SA = {}, SB = {}, SC = {}, SBIAS = {};  // batch strides, -1: dense\n"
      "static constexpr int64_t NPANELS = (N + NR - 1) / NR, PANEL = K * NR;\n"
      "static constexpr int64_t NKB = K == 0 ? 1 : (K + KC - 1) / KC;\n"
      "static constexpr bool EVEN_K = K > 0 && K % KC == 0;\n"
      "static constexpr bool PREFETCH_C = {}, DIRECT_A = {}, DIRECT_B = {};\n"
      "static constexpr int64_t BS = DIRECT_B ? N : NR;  // B's row stride as the micro-kernel reads it\n\n",
      c.mr, c.nr, c.mc, c.nc, c.kc, c.group_m, p.m, p.n, p.k, p.batch, b_copies, p.batch_stride_a,
      p.batch_stride_b, p.batch_stride_c, p.batch_stride_bias, c.prefetch_c,
      !c.pack_a && !p.trans_a, direct_b(p, c));
  code += "struct Ctx {\n  const float* bias;\n  const float* A;\n  const float* Bp;\n  float* C;\n"
          "  int64_t M, sa, sc, sbias, sb;  // sb: B's batch stride (read in place only)\n  const void* const* extra;\n"
          "  int64_t units_m, tiles_m, tiles_n;  // micro-panel rows; the run's tile grid\n};\n\n";
  code += vf > 1 ? vector_prelude(vf) + vector_micro_kernel(c, vf) : scalar_micro_kernel();
  code += pack_functions(p);
  if (!identity) code += epilogue_function(p, e);
  code += tile_function(identity, c.epilogue_rows);
  code += kRunTask;

  code += R"(static int64_t packed_floats() { return B_COPIES * NPANELS * PANEL; }

static void pack_all(const float* B, float* packed, const int64_t p) {
  const int64_t sb = SB >= 0 ? SB : K * N;
  pack_panel(B + (p / NPANELS) * sb, packed + p * PANEL, p % NPANELS);
}

KILN_EXPORT int64_t kiln_gemm_packed_b_floats() { return packed_floats(); }

KILN_EXPORT void kiln_gemm_pack_b(const float* B, float* packed) {
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < B_COPIES * NPANELS; ++p) pack_all(B, packed, p);
}

KILN_EXPORT void kiln_gemm(const float* bias, const float* A, const float* B, float* C, int64_t M_arg,
                           const void* const* extra, int nthreads) {
  const int64_t M = KM >= 0 ? KM : M_arg;
  if (M <= 0 || N == 0 || BATCH == 0) return;
  Ctx x{bias, A, B, C, M, SA >= 0 ? SA : M * K, SC >= 0 ? SC : M * N, SBIAS >= 0 ? SBIAS : M * N,
        SB >= 0 ? SB : K * N, extra, (M + MR - 1) / MR, 1, 1};
  int threads = nthreads > 0 ? nthreads : omp_get_max_threads();
  if (BATCH * M * N * (K > 0 ? K : 1) < 32768) threads = 1;  // less work than waking a team costs
  // Tiles of at most MC x NC, evened out (no thin last tile), and at least two tasks per thread where
  // N allows it. Any tiling gives the same bits: each output's K order is fixed.
  const int64_t tiles_m = (M + MC - 1) / MC;
  int64_t tiles_n = (N + NC - 1) / NC;
  const int64_t want_n = (2 * threads + BATCH * tiles_m - 1) / (BATCH * tiles_m);
  if (tiles_n < want_n) tiles_n = want_n < NPANELS ? want_n : NPANELS;
  x.tiles_m = tiles_m;
  x.tiles_n = tiles_n;
)";
  if (!p.b_constant && !direct_b(p, c))
    code += "  const size_t bytes = static_cast<size_t>(packed_floats() > 0 ? packed_floats() : 16) * sizeof(float);\n"
            "  float* owned = static_cast<float*>(::operator new(bytes, std::align_val_t(64)));\n"
            "  x.Bp = owned;\n";
  code += R"(  const int64_t tasks = BATCH * tiles_m * tiles_n;
  if (tasks < threads) threads = static_cast<int>(tasks);
#pragma omp parallel num_threads(threads)
  {
)";
  if (!p.b_constant && !direct_b(p, c))
    code += "#pragma omp for schedule(static)\n"
            "    for (int64_t p = 0; p < B_COPIES * NPANELS; ++p) pack_all(B, owned, p);\n";
  if (c.persistent)
    code += "    const int64_t tid = omp_get_thread_num(), nt = omp_get_num_threads();\n"
            "    for (int64_t t = tid; t < tasks; t += nt) run_task(x, t, tiles_m, tiles_n);\n";
  else
    code += "#pragma omp for schedule(dynamic, 1)\n"
            "    for (int64_t t = 0; t < tasks; ++t) run_task(x, t, tiles_m, tiles_n);\n";
  code += "  }\n";
  if (!p.b_constant && !direct_b(p, c)) code += "  ::operator delete(owned, std::align_val_t(64));\n";
  code += "}\n";

  KernelSource source;
  source.name = "gemm_" + c.name();
  source.code = std::move(code);
  source.entry_points = {"kiln_gemm", "kiln_gemm_packed_b_floats", "kiln_gemm_pack_b"};
  return source;
}

}  // namespace kiln::templates::gemm
