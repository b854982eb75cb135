// The x86 vector extensions generated kernels may use, and the compiler flags that enable them.
// Kernels are built for explicit extensions, never -march=native: a cache shared between machines
// must not hand one CPU's code to another.
#pragma once
#include <string>
#include <vector>

namespace kiln::codegen::cpu {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;

  bool operator==(const CpuFeatures&) const = default;
  // True if every extension this set has, `other` has too.
  bool subset_of(const CpuFeatures& other) const;
  // The AVX-512 tier kernels target: F, BW, DQ, VL together with AVX2 and FMA.
  bool has_avx512_tier() const { return avx512f && avx512bw && avx512dq && avx512vl && has_avx2_tier(); }
  bool has_avx2_tier() const { return avx2 && fma; }

  // Named sets, for tests and for building for a smaller CPU than this one.
  static CpuFeatures baseline() { return {}; }
  static CpuFeatures avx2_tier() { return {true, true, false, false, false, false}; }
  static CpuFeatures avx512_tier() { return {true, true, true, true, true, true}; }
};

// What this CPU and OS support (AVX-512 only where the OS saves the ZMM state).
CpuFeatures detect_cpu_features();

// "avx2,fma,avx512f,..." (the extensions present), or "baseline" when none is.
std::string to_string(const CpuFeatures& features);

// -m flags for the highest tier `features` covers: the AVX-512 set, the AVX2 set, or nothing.
std::vector<std::string> isa_flags(const CpuFeatures& features);

}  // namespace kiln::codegen::cpu
