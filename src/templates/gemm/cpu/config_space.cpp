// The GEMM template's config space: register micro-tiles that fit the vector register file, cache
// blocks sized for this class of CPU (32-48 KB L1D, 1-2 MB L2 per core: the packed B block kc x nc
// lives in L2, the A micro-panel mr x kc in L1), grouped tile orders, persistent or dynamic workers.
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <set>
#include <utility>

#include "templates/gemm/cpu/gemm_template.h"

namespace kiln::templates::gemm {

using codegen::cpu::CpuFeatures;

namespace {

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

struct MicroTile {
  int mr, nr;
};

// Register tiles per tier, best-known first (8x48 then 6x64: measured on Zen 4, see config_space).
// AVX-512: 32 registers, mr * nr/16 accumulators plus the B vectors and one broadcast. AVX2: 16.
std::vector<MicroTile> micro_tiles(int vf, int64_t m, int64_t n, bool exhaustive) {
  std::vector<MicroTile> tiles;
  if (vf == 16) {
    if (n <= 16) tiles = {{14, 16}, {8, 16}, {28, 16}};
    else if (n <= 32) tiles = {{14, 32}, {8, 32}, {6, 32}};
    else tiles = {{8, 48}, {6, 64}, {14, 32}, {12, 32}, {4, 64}, {7, 48}};
  } else if (vf == 8) {
    tiles = n <= 8 ? std::vector<MicroTile>{{8, 8}, {12, 8}} : std::vector<MicroTile>{{6, 16}, {4, 24}, {5, 16}};
  } else {
    tiles = {{4, 16}, {8, 8}};
  }
  // Tiles whose nr leaves over 10% of the padded columns empty (N = 64 with nr = 48) go last.
  auto wasteful = [n](const MicroTile& t) { return n > 0 && (round_up(n, t.nr) - n) * 10 > round_up(n, t.nr); };
  std::stable_partition(tiles.begin(), tiles.end(), [&](const MicroTile& t) { return !wasteful(t); });
  // A known small M (GEMV-like): a tile exactly M rows tall, so no FMA is spent on padding rows.
  if (m >= 1 && m < tiles.front().mr && vf > 1) {
    const int regs = vf == 16 ? 32 : 16, mr = static_cast<int>(m);
    int nr = 4 * vf;  // the widest B row that still fits the registers
    while (nr > vf && mr * (nr / vf) + nr / vf + 1 > regs) nr -= vf;
    tiles.insert(tiles.begin(), {mr, nr});
  }
  if (!exhaustive) tiles.resize(std::min<size_t>(tiles.size(), vf == 16 && n > 32 ? 3 : 2));
  return tiles;
}

// The blocks for one micro-tile: kc, nc from an L2 budget for the B block, mc a few dozen rows.
GemmConfig blocked(const GemmProblem& p, MicroTile t, int64_t kc, int64_t l2_bytes, int64_t mc_rows, int group_m,
                   bool persistent) {
  GemmConfig c;
  c.mr = t.mr;
  c.nr = t.nr;
  c.kc = std::max<int64_t>(1, std::min({kc, p.k, int64_t{16384} / t.mr}));
  c.nc = std::max<int64_t>(t.nr, l2_bytes / (c.kc * 4) / t.nr * t.nr);
  c.nc = std::min(c.nc, round_up(std::max<int64_t>(p.n, 1), t.nr));
  c.mc = std::max<int64_t>(t.mr, mc_rows / t.mr * t.mr);
  if (p.m >= 0) c.mc = std::min(c.mc, round_up(std::max<int64_t>(p.m, 1), t.mr));
  c.group_m = group_m;
  c.persistent = persistent;
  return c;
}

}  // namespace

std::string GemmConfig::name() const {
  return fmt::format("mr{}nr{}_mc{}_nc{}_kc{}_g{}_{}{}{}{}{}", mr, nr, mc, nc, kc, group_m, persistent ? "p" : "d",
                     pack_a ? "" : "_da", pack_b ? "" : "_db", prefetch_c ? "" : "_nopf", epilogue_rows ? "_er" : "");
}

std::optional<GemmConfig> GemmConfig::parse(std::string_view name) {
  GemmConfig c;
  long long mc = 0, nc = 0, kc = 0;
  char schedule = 0;
  int used = 0;
  const std::string text(name);
  if (std::sscanf(text.c_str(), "mr%dnr%d_mc%lld_nc%lld_kc%lld_g%d_%c%n", &c.mr, &c.nr, &mc, &nc, &kc, &c.group_m,
                  &schedule, &used) != 7 ||
      (schedule != 'p' && schedule != 'd'))
    return std::nullopt;
  c.mc = mc;
  c.nc = nc;
  c.kc = kc;
  c.persistent = schedule == 'p';
  std::string_view rest = name.substr(static_cast<size_t>(used));
  for (auto [suffix, flag] : {std::pair{std::string_view("_da"), &c.pack_a}, {"_db", &c.pack_b}, {"_nopf", &c.prefetch_c}})
    if (rest.substr(0, suffix.size()) == suffix) {
      *flag = false;
      rest.remove_prefix(suffix.size());
    }
  if (rest.substr(0, 3) == "_er") {
    c.epilogue_rows = true;
    rest.remove_prefix(3);
  }
  if (!rest.empty() || c.name() != name) return std::nullopt;
  return c;
}

std::string problem_key(const GemmProblem& p) {
  const char* bias = p.bias == GemmProblem::Bias::none ? "none" : p.bias == GemmProblem::Bias::row ? "row" : "full";
  return fmt::format("m{}_n{}_k{}_b{}_sa{}_sb{}_sc{}_sbias{}_{}{}_{}_bias{}_a{:a}_b{:a}", p.m, p.n, p.k, p.batch,
                     p.batch_stride_a, p.batch_stride_b, p.batch_stride_c, p.batch_stride_bias, p.trans_a ? 't' : 'n',
                     p.trans_b ? 't' : 'n', p.b_constant ? "const" : "call", bias, p.alpha, p.beta);
}

int vector_floats(const CpuFeatures& f) { return f.has_avx512_tier() ? 16 : f.has_avx2_tier() ? 8 : 1; }

std::string check_config(const GemmProblem& p, const GemmConfig& c, const CpuFeatures& f) {
  const int vf = vector_floats(f);
  if (p.m < -1 || p.n < 0 || p.k < 0 || p.batch < 0) return "bad problem sizes";
  for (int64_t s : {p.batch_stride_a, p.batch_stride_b, p.batch_stride_c, p.batch_stride_bias})
    if (s < kDenseStride) return "bad batch stride";
  // nr: whole vectors, and whole 8-column blocks for the transposing B packer.
  const int nr_unit = std::max(vf, 8);
  if (c.mr < 1 || c.nr < 1 || c.nr % nr_unit != 0) return fmt::format("nr {} is not a multiple of {}", c.nr, nr_unit);
  if (vf > 1 && c.mr * (c.nr / vf) + c.nr / vf + 1 > (vf == 16 ? 32 : 16))
    return fmt::format("micro-tile {}x{} does not fit the registers", c.mr, c.nr);
  if (c.mc < c.mr || c.mc % c.mr != 0) return "mc must be a multiple of mr";
  if (c.nc < c.nr || c.nc % c.nr != 0) return "nc must be a multiple of nr";
  // The packed A micro-panel (mr x kc) lives on the worker's stack: at most 64 KB.
  if (c.kc < 1 || c.mr * c.kc > 16384) return "kc out of range";
  if (c.group_m < 1) return "group_m must be positive";
  return {};
}

namespace {

// The space without epilogue variants.
std::vector<GemmConfig> base_space(const GemmProblem& p, const CpuFeatures& f, bool exhaustive) {
  const int vf = vector_floats(f);
  std::vector<GemmConfig> out;
  std::set<std::string> seen;
  auto add = [&](GemmConfig c, bool direct_a) {
    // Reading A in place needs a row-major A; measured on Zen 4 (1 thread, CPU time): +4-5% for 6x64 at
    // 512x3072x768 and 2048^3, but -20% for 14x32 at K = 2048 (14 rows 8 KB apart share L1 sets).
    c.pack_a = !(direct_a && !p.trans_a && (c.mr <= 8 || p.k * 4 % 4096 != 0));
    if (check_config(p, c, f).empty() && seen.insert(c.name()).second) out.push_back(c);
  };
  const std::vector<MicroTile> tiles = micro_tiles(vf, p.m, p.n, exhaustive);
  // First (the default): K in one block up to 768 (no C round trips) with a narrower B block, A read in
  // place; measured best at 512x3072x768, 2048^3 and 128x3072x768 (1 thread, CPU time, vs oneDNN).
  const size_t best = std::min<size_t>(tiles.size(), 2);
  if (p.m >= 1 && p.m == tiles[0].mr) add(blocked(p, tiles[0], 768, 768 << 10, 96, 8, true), true);  // small M
  for (size_t i = 0; i < best; ++i) add(blocked(p, tiles[i], 768, 768 << 10, 96, 8, true), true);
  for (size_t i = 0; i < best; ++i) add(blocked(p, tiles[i], 256, 768 << 10, 96, 8, true), true);
  // Packed A (the only form for a transposed A) for every tile, or in the fast space the third.
  for (size_t i = exhaustive ? 0 : 2; i < tiles.size(); ++i)
    add(blocked(p, tiles[i], 256, 768 << 10, 96, 8, true), false);
  add(blocked(p, tiles[0], 256, 768 << 10, 96, 8, false), true);
  // A per-call row-major B read in place, for tiles whose nr divides N (no per-call packing).
  auto add_direct_b = [&](MicroTile t, int64_t kc) {
    GemmConfig c = blocked(p, t, kc, 768 << 10, 96, 8, true);
    c.pack_b = false;
    if (!p.b_constant && !p.trans_b && p.n % t.nr == 0) add(c, true);
  };
  for (size_t i = 0; i < best; ++i) add_direct_b(tiles[i], 768);
  if (!exhaustive) return out;
  for (const MicroTile& t : tiles) add_direct_b(t, 256);
  // Exhaustive: every tile with a deeper K block; for the best-known tiles, thinner and taller row
  // blocks, a smaller L2 budget, K in one block up to 1024, the dynamic schedule, C prefetch off.
  for (const MicroTile& t : tiles) add(blocked(p, t, 512, 768 << 10, 96, 8, true), false);
  for (size_t i = 0; i < std::min<size_t>(tiles.size(), 3); ++i)
    for (bool direct : {false, true}) {
      if (!direct) add(blocked(p, tiles[i], 256, 768 << 10, 48, 4, true), direct);
      if (!direct) add(blocked(p, tiles[i], 256, 768 << 10, 144, 8, true), direct);
      if (direct) add(blocked(p, tiles[i], 384, 512 << 10, 96, 8, true), direct);
      add(blocked(p, tiles[i], 1024, 768 << 10, 96, 8, true), direct);
    }
  GemmConfig no_prefetch = blocked(p, tiles[0], 256, 768 << 10, 96, 8, true);
  no_prefetch.prefetch_c = false;
  add(no_prefetch, true);
  return out;
}

}  // namespace

bool has_store_hook(const GemmProblem& p, const GemmEpilogue& e) {
  return p.alpha != 1.f || p.bias != GemmProblem::Bias::none || !e.body.empty();
}

std::vector<GemmConfig> config_space(const GemmProblem& p, const CpuFeatures& f, bool exhaustive, bool with_epilogue) {
  std::vector<GemmConfig> out = base_space(p, f, exhaustive);
  if (!with_epilogue) return out;
  // The store hook per micro-panel row: for the default config (fast) or every config (exhaustive).
  const size_t base = out.size();
  for (size_t i = 0; i < (exhaustive ? base : 1); ++i) {
    GemmConfig c = out[i];
    c.epilogue_rows = true;
    out.push_back(c);
  }
  return out;
}

}  // namespace kiln::templates::gemm
