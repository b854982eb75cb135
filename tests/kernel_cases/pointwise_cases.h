// The pointwise kernels the CUDA emitter is tested on: small graphs (GraphBuilder), each fused by
// schedule::find_pointwise_groups into one group, with the tolerance its comparison against the fp64
// reference uses, and the inputs and comparisons the GPU test runs.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "schedule/fuse_pointwise.h"

namespace kiln::backend::cuda::testing {

struct Tolerance {
  enum class Kind {
    exact,        // the same value, the sign of a zero included (any NaN matches any NaN)
    exact_value,  // the same value, zeros of either sign equal (Max / Min of +0 and -0: IEEE leaves it open)
    ulps,         // floats within `ulps` units in the last place (of the OUTPUT dtype) of the fp64
                  // reference, plus `atol`
  };
  Kind kind = Kind::exact;
  double ulps = 0;
  const char* why = "";  // where the bound comes from, for messages and the summary
  double atol = 0;       // an absolute allowance on top (cancellation the ulps cannot express)
};

// Float elements the fp64 reference does not model: where an f32 intermediate of a fused half chain
// overflows although the exact value would not (the unfused graph, rounding each node to its half type,
// overflows there too): the value the kernel must store, or nullopt to use the reference.
using FloatEdgeRule = std::function<std::optional<double>(const std::vector<Tensor>& inputs, int64_t element)>;

struct PointwiseCase {
  std::string name;  // also the kernel's name
  std::function<Graph()> graph;
  Tolerance tolerance;
  FloatEdgeRule float_edge = {};  // empty: every element against the reference
};

// Every case: f32 / f64 / integer ones, then the f16 and bf16 ones (half_pointwise_cases()).
const std::vector<PointwiseCase>& pointwise_cases();
// bf16 and f16 kernels (pointwise_half_cases.cpp): loads widen to f32, the chain runs in f32, the store
// (and an explicit Cast to a half type) rounds to nearest even.
std::vector<PointwiseCase> half_pointwise_cases();

// The graph (types inferred) and its one pointwise group, the kernel named after the case.
struct BuiltCase {
  Graph graph;
  schedule::PointwiseGroup group;
};
BuiltCase build_case(const PointwiseCase& c);

// Size symbols of a run of size n: "n" = n, "m" = 3 (1 when n == 31: a symbolic size that is 1).
std::map<std::string, int64_t> symbol_values(int64_t n);

// One tensor per group input at those sizes: graph constants as they are, other inputs drawn at random
// (seeded) in their own dtype, the special values of that dtype (NaN, +-Inf, +-0, the largest finite,
// subnormals, integer limits, ...) leading the first half (as many as fit) and sprinkled among the rest
// (pointwise_inputs.cpp).
std::vector<Tensor> make_inputs(const Graph& g, const schedule::PointwiseGroup& group,
                                const std::map<std::string, int64_t>& symbols, uint64_t seed);

// The spacing of dtype `t` (f64, f32, f16, bf16) at |v|: the distance from the largest value of `t` not
// above |v| to the next (below the normal range, the subnormal spacing).
double ulp_at(double v, DType t);
// The magnitude from which round-to-nearest-even to `t` gives infinity (the largest finite value plus
// half its spacing; a tie there rounds up, the largest mantissa being odd); infinity for f64.
double overflow_threshold(DType t);

// The size symbols' values in kernel parameter order, read from the inputs (group.symbols).
std::vector<int64_t> symbol_arguments(const schedule::PointwiseGroup& group, const std::vector<Tensor>& inputs);

struct Comparison {
  bool ok = true;
  int64_t elements = 0;
  int64_t edges = 0;      // elements checked by the case's FloatEdgeRule
  double max_ulps = 0;    // the largest error seen (Kind::ulps)
  double worst = 0;       // the largest error / bound seen (Kind::ulps; <= 1 passes)
  std::string failure;    // the first mismatch, when !ok
};

// `got` in the output's dtype, `want` from reference_group.
Comparison compare_to_reference(const PointwiseCase& c, const Tensor& got, const Tensor& want,
                                const std::vector<Tensor>& inputs);

// One launch of a case's kernel, on whatever runs it (the GPU, or the host emulation): the output
// (of `dtype` and `shape`) and whether the kGuardBytes after it, filled with kGuard first, are intact.
inline constexpr size_t kGuardBytes = 256;
inline constexpr unsigned char kGuard = 0xA5;  // elements a kernel misses keep this pattern too
struct KernelRun {
  Tensor output;
  bool guard_intact = true;
};
using KernelRunner = std::function<KernelRun(const std::vector<Tensor>& inputs, const std::vector<int64_t>& symbols,
                                             DType dtype, const std::vector<int64_t>& shape, int64_t blocks)>;

struct CaseReport {
  std::vector<std::string> failures;
  double max_ulps = 0, worst = 0;
  int64_t edges = 0;
  std::string summary() const;  // the largest error seen (in ulps and as a fraction of the bound), the edges
};

// For each row count (the symbol n): fresh inputs, the reference, the kernel on `blocks_of(numel)`
// blocks and, at the largest row count, on 3 blocks too (each thread then strides over many
// elements), each compared to the reference.
CaseReport run_case(const PointwiseCase& c, const BuiltCase& built, const std::function<int64_t(int64_t)>& blocks_of,
                    const std::vector<int64_t>& rows, const KernelRunner& run);

}  // namespace kiln::backend::cuda::testing
