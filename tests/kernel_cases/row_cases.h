// The row kernels the CUDA row emitter is tested on: small graphs (GraphBuilder) that
// schedule::find_row_groups fuses into one row group each (softmax, log-softmax, bert's masked softmax,
// LayerNorm with a fused residual Add, Reduce* rows outputs, log-softmax + GatherElements; f32 and f64,
// and the first five in bf16 and f16 too), the sizes
// each is run at, kiln's fp64 reference of the group's nodes, and the comparison with its tolerance.
// Shared by the GPU test (row_cuda_test.cpp) and the host emulation (row_emulation_test.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/cuda/emit_row_cuda.h"
#include "kiln/graph.h"
#include "pointwise_cases.h"  // KernelRun, kGuard, kGuardBytes
#include "schedule/fuse_rows.h"

namespace kiln::backend::cuda::testing {

// How far a kernel may be from the fp64 reference (see row_tolerance).
enum class RowAccuracy {
  exact,          // max / min of the inputs: the same values
  softmax,        // exp(x - max) / sum
  log_softmax,    // x - max - log(sum)
  layernorm,      // (x - mean) / sqrt(var + eps) * gamma (+ beta)
  layernorm_f64,  // the same with f64 reductions of f32 data (stash_type 1 of an f64 computation)
  sum,            // the sum of N(0, 2) values
  mean,           // their mean
};

using Sizes = std::map<std::string, int64_t>;  // symbol values

struct RowCase {
  std::string name;  // also the kernel's name
  std::function<Graph()> graph;
  std::vector<Sizes> sizes;  // the GPU test runs each
  RowAccuracy accuracy = RowAccuracy::exact;
  int special_every = 97;     // NaN, +inf, -inf sprinkled in some rows of float inputs, about one each per this many
  bool neg_inf_row = false;   // row 1 of each float input all -inf (with at least 3 rows)
  bool gather_out_of_range = false;  // some rows' GatherElements index moved outside [-w, w): NaN there
};

struct BuiltRowCase {
  Graph graph;
  schedule::RowGroup group;  // the one group, named after the case
};

const std::vector<RowCase>& row_cases();
const RowCase& row_case(const std::string& name);
BuiltRowCase build_row_case(const RowCase& c);

struct RowTolerance {
  double rtol = 0, atol = 0;  // |got - want| <= atol + rtol * |want| + ulps * ulp_at(max(|got|, |want|), output)
  std::string why;
  double ulps = 0;  // 0.5 for an f16 / bf16 output (the store rounds the f32 result), else 0
  DType output = DType::f32;
};
// The bound for rows of `cols` columns reduced in `accumulator` (f32 or f64; f16 and bf16 reductions
// accumulate in f32) by blocks of `threads`, stored as `output`.
RowTolerance row_tolerance(const RowCase& c, DType accumulator, DType output, int64_t cols, int threads);

// The emitter options every case runs under: a block per row at 256 threads for symbolic widths (a
// warp per row for constant ones up to kWarpRowMaxCols), a block per row at 64 threads, a warp per row at
// 64 threads at any width.
struct RowVariant {
  std::string label;
  codegen::cuda::CudaRowEmitOptions options;
};
const std::vector<RowVariant>& row_variants();

// One launch: inputs (one per group input), the kernel's size arguments, output dtype and shape, grid.
using RowKernelRunner =
    std::function<KernelRun(const std::vector<Tensor>& inputs, const std::vector<int64_t>& symbols, int64_t rows,
                            int64_t cols, DType dtype, const std::vector<int64_t>& shape, int64_t blocks)>;

struct RowReport {
  std::vector<std::string> failures;
  double worst = 0;  // the largest |got - want| / bound seen (<= 1 passes)
  int64_t elements = 0, nan_expected = 0;
  bool half_output = false;
  double max_ulps = 0;  // the largest |got - want| in ulps of the (half) output type
  std::string summary() const;
};

// For each entry of `sizes`: fresh inputs (seeded by the case name and sizes), the reference, the
// kernel on launch.blocks(rows, cols) blocks and, with more than 2 rows, on 2 blocks too (each block
// then loops over rows), each compared with the reference and checked for writes past the output.
RowReport run_row_case(const RowCase& c, const BuiltRowCase& built, const codegen::cuda::CudaRowLaunch& launch,
                       const std::vector<Sizes>& sizes, const RowKernelRunner& run);
// The same for any backend: how many partial sums a row's reduction keeps (its tree's width, which
// sets the tolerance: a GPU's threads per row, a CPU kernel's lanes), the grid (passed to the runner)
// and how to name it in messages.
struct RowOrder {
  int threads_per_row = 32;
  std::function<int64_t(int64_t rows, int64_t cols)> blocks;
  std::string label;
};
RowReport run_row_case(const RowCase& c, const BuiltRowCase& built, const RowOrder& order,
                       const std::vector<Sizes>& sizes, const RowKernelRunner& run);

}  // namespace kiln::backend::cuda::testing
