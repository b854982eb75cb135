// CUDA C++ the Hopper kernels share (hopper_device_source.h).
#include "backend/cuda/hopper_device_source.h"

namespace kiln::backend::cuda {

std::string hopper_device_helpers() {
  return R"(
// A CUtensorMap (driver-encoded, opaque), passed by value as a __grid_constant__ parameter.
struct __align__(64) KilnTensorMap { unsigned long long words[16]; };

KILN_DEV void kiln_bar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
KILN_DEV void kiln_bar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
KILN_DEV void kiln_bar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// Until the barrier's phase of this parity has completed (a fresh barrier completes parity 1 at once).
KILN_DEV void kiln_bar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
// The box at (inner, row) of a 2-D map's matrix into shared memory at dst, counted on `bar`.
KILN_DEV void kiln_tma_load(unsigned dst, const KilnTensorMap* map, unsigned bar, int inner, int row) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      :: "r"(dst), "l"((unsigned long long)map), "r"(bar), "r"(inner), "r"(row) : "memory");
}
// The same for a 4-D map, coordinates innermost first.
KILN_DEV void kiln_tma_load4(unsigned dst, const KilnTensorMap* map, unsigned bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
      :: "r"(dst), "l"((unsigned long long)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
// A wgmma matrix descriptor of a tile of 128-byte rows under the 128-byte swizzle: the start address
// (16-byte units), leading offset 1 (unused: no operand here is wider than one swizzle row), 1024 bytes
// between 8-row groups. K-major (rows along M or N) and MN-major (rows along K) tiles take the same bits;
// the instruction's transpose flag tells them apart. Advancing K-major K by 16 elements adds 32 bytes to
// the start (2 units), MN-major K by 16 rows 2048 bytes: the swizzle is of absolute address bits, which is
// why every tile starts on 1 KB.
KILN_DEV unsigned long long kiln_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
KILN_DEV void kiln_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
KILN_DEV void kiln_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
KILN_DEV void kiln_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(kPending) : "memory"); }
)";
}

}  // namespace kiln::backend::cuda
