#include "codegen/cpu/cpu_features.h"

namespace kiln::codegen::cpu {

bool CpuFeatures::subset_of(const CpuFeatures& o) const {
  return (!avx2 || o.avx2) && (!fma || o.fma) && (!avx512f || o.avx512f) && (!avx512bw || o.avx512bw) &&
         (!avx512dq || o.avx512dq) && (!avx512vl || o.avx512vl);
}

CpuFeatures detect_cpu_features() {
  // libgcc's detection also checks XCR0, so an OS that does not save AVX/ZMM state reports no AVX.
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  return f;
}

std::string to_string(const CpuFeatures& f) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ',';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512dq, "avx512dq");
  add(f.avx512vl, "avx512vl");
  return s.empty() ? "baseline" : s;
}

std::vector<std::string> isa_flags(const CpuFeatures& f) {
  if (f.has_avx512_tier()) return {"-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mfma", "-mavx2"};
  if (f.has_avx2_tier()) return {"-mavx2", "-mfma"};
  return {};
}

}  // namespace kiln::codegen::cpu
