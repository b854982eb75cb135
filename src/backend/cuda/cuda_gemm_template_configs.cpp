// The GEMM template's default configs and the heuristic pick among them (host-only: the NVRTC-only
// test links it without the backend). The autotuner times the configs; the pick is its starting point.
#include <algorithm>

#include "backend/cuda/cuda_gemm_template_source.h"

namespace kiln::backend::cuda {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::vector<GemmTemplateConfig> default_gemm_template_configs() {
  // {bm, bn, bk, warps_m, warps_n, stages, split_k, group_m}
  return {
      {128, 256, 32, 2, 4, 3, 1, 8},  // large products: 64x64 warp tiles
      {128, 128, 32, 2, 4, 3, 1, 8},
      {128, 128, 64, 2, 4, 3, 1, 8},  // longer K steps: fewer barriers a K (the chooser takes the one above)
      {128, 64, 32, 2, 2, 3, 1, 8},
      {64, 128, 32, 2, 2, 3, 1, 8},
      {64, 64, 64, 2, 2, 3, 1, 8},
      {64, 64, 64, 2, 2, 4, 2, 8},  // small M x N, long K
      {64, 64, 64, 2, 2, 4, 4, 8},
  };
}

std::vector<GemmTemplateConfig> hopper_gemm_template_configs() {
  const GemmFamily wg = GemmFamily::wgmma;
  // {bm, bn, bk, -, -, stages, split_k, group_m, family, persistent, cluster_reduce}; 128-row tiles have two consumer
  // warpgroups. Stages fill about 192 KB of shared memory (64 x 64 stays at 96 KB: two blocks an SM).
  return {
      {128, 256, 64, 0, 0, 4, 1, 8, wg, true},   // large products
      {128, 256, 64, 0, 0, 4, 1, 8, wg, false},
      {128, 128, 64, 0, 0, 6, 1, 8, wg, true},
      {128, 128, 64, 0, 0, 6, 1, 8, wg, false},
      {128, 64, 64, 0, 0, 8, 1, 8, wg, true},
      {64, 128, 64, 0, 0, 8, 1, 8, wg, true},
      {64, 64, 64, 0, 0, 6, 1, 8, wg, false},    // M = 128: more tiles, and split-K over long K
      {64, 64, 64, 0, 0, 6, 2, 8, wg, false},
      {64, 64, 64, 0, 0, 6, 4, 8, wg, false},
      {64, 64, 64, 0, 0, 6, 8, 8, wg, false},
      {64, 128, 64, 0, 0, 6, 2, 8, wg, false},
      {64, 128, 64, 0, 0, 6, 4, 8, wg, false},
      {128, 64, 64, 0, 0, 6, 4, 8, wg, false},
      // M = 128 with K split over a cluster of blocks, summed in distributed shared memory: whole 128-row
      // tiles (A read once a block). The ones `kiln sweep gemm --device cuda` showed near the best at bert's
      // shapes on an H100 (2026-12-06): 8 splits of a 768 x 3072 product, few splits of wide ones (a block
      // an SM: more than 132 blocks is a second wave).
      {128, 64, 64, 0, 0, 6, 2, 8, wg, false, true},
      {128, 64, 64, 0, 0, 6, 3, 8, wg, false, true},
      {128, 64, 64, 0, 0, 6, 4, 8, wg, false, true},
      {128, 64, 64, 0, 0, 6, 8, 8, wg, false, true},
      {128, 32, 64, 0, 0, 4, 4, 8, wg, false, true},
      {128, 128, 64, 0, 0, 4, 4, 8, wg, false, true},
      {128, 128, 64, 0, 0, 4, 6, 8, wg, false, true},
  };
}

GemmTemplateConfig choose_gemm_template_config(int64_t m, int64_t n, int64_t k, int sm_count) {
  const std::vector<GemmTemplateConfig> configs = default_gemm_template_configs();
  const int64_t sms = std::max(sm_count, 1);
  auto tiles = [&](const GemmTemplateConfig& c) { return ceil_div(m, c.bm) * ceil_div(n, c.bn); };
  // Largest tile first (the list's order) among those without split-K that fill the SMs.
  for (const GemmTemplateConfig& c : configs)
    if (c.split_k == 1 && tiles(c) >= sms) return c;
  const GemmTemplateConfig* smallest = nullptr;
  for (const GemmTemplateConfig& c : configs)
    if (c.split_k == 1) smallest = &c;
  // Too few tiles even at the smallest: split K where each split keeps at least 256 of it, the most
  // splits that still leave no more than two blocks per SM.
  const GemmTemplateConfig* best = smallest;
  for (const GemmTemplateConfig& c : configs)
    if (c.split_k > 1 && c.bm == smallest->bm && c.bn == smallest->bn && k / c.split_k >= 256 &&
        tiles(c) * c.split_k <= 2 * sms && (best->split_k < c.split_k))
      best = &c;
  return *best;
}

}  // namespace kiln::backend::cuda
