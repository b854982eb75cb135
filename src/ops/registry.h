// The op registry: for each op in ops.def, its shape inference and its eager kernel. Filled by explicit
// calls (register_all.cpp lists them), never by static constructors.
#pragma once
#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "support/error.h"

namespace kiln {

// What shape inference sees of one node. A missing optional input has in(i) == nullptr; a value not
// known at compile time has value(i) == nullptr. At run time every present input has a value.
class InferContext {
 public:
  InferContext(const Node& node, std::vector<const TensorType*> in, std::vector<const Tensor*> values,
               int* fresh_counter, int64_t max_rank)
      : node_(node), in_(std::move(in)), values_(std::move(values)), fresh_(fresh_counter), max_rank_(max_rank) {}

  const Node& node() const { return node_; }
  size_t num_inputs() const { return in_.size(); }
  bool has(size_t i) const { return i < in_.size() && in_[i] != nullptr; }
  // The type of input i; a missing required input is a user error naming the node.
  const TensorType& in(size_t i) const;
  // The value of input i if known (constant at compile time; always at run time), else nullptr.
  const Tensor* value(size_t i) const { return i < values_.size() ? values_[i] : nullptr; }
  // A new symbolic dimension for a size that cannot be known before run time.
  Dim fresh_dim(int64_t hint = -1);
  int64_t max_rank() const { return max_rank_; }
  // A valid node using a feature kiln does not implement (UnsupportedError, a kind of user error).
  template <class... Args>
  [[noreturn]] void unsupported(fmt::format_string<Args...> f, Args&&... args) const {
    ::kiln::unsupported("node '{}' ({}): {}", node_.name, op_name(node_.op), fmt::format(f, std::forward<Args>(args)...));
  }
  // A user error that names this node.
  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    user_error("node '{}' ({}): {}", node_.name, op_name(node_.op), fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const Node& node_;
  std::vector<const TensorType*> in_;
  std::vector<const Tensor*> values_;
  int* fresh_;
  int64_t max_rank_;
};

struct KernelContext {
  int threads = 1;
  bool reference = false;  // the fp64 oracle: plain loops only, no vendor libraries
  // The run's limits, for kernels that run nodes of their own (If's branches); run_node sets them.
  int64_t max_rank = 16;
  int64_t max_tensor_bytes = int64_t{16} << 30;
  int64_t max_loop_iterations = 10'000'000;  // iterations of one Loop / Scan run (setting max_loop_iterations)
};

// Returns one type per node output (omitted optional outputs may get any type).
using InferFn = std::vector<TensorType> (*)(InferContext&);
// Computes the node. Outputs arrive allocated with the inferred shapes, unless the op's definition
// says the kernel makes its own (views such as Reshape assign out[i] = in[0].reshaped(...)).
using KernelFn = void (*)(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out,
                          const KernelContext&);

struct OpDef {
  InferFn infer = nullptr;
  KernelFn kernel = nullptr;
  bool kernel_makes_outputs = false;  // see KernelFn
  bool handles_half = false;          // false: the executor runs f16/bf16 inputs in f32 and casts back
  int min_inputs = 0;
  int max_inputs = 0;   // -1: variadic
};

class OpRegistry {
 public:
  void add(OpKind op, OpDef def);
  const OpDef* find(OpKind op) const;
  bool supports(OpKind op) const { return find(op) != nullptr; }

 private:
  std::array<OpDef, kNumOps> defs_{};
  std::array<bool, kNumOps> present_{};
};

// The registry with every op kiln implements (built on first use, from register_all).
const OpRegistry& op_registry();
void register_all_ops(OpRegistry& r);

// Infers the types of `n`'s outputs in `g` from its inputs' types and constant values (infer_node.cpp);
// a node the registry does not have, or with the wrong number of inputs or outputs, is a user error.
// `fresh` numbers new symbolic dims; first_fresh_symbol is the first number no "_dN" of `g` uses.
void infer_node_types(Graph& g, Node& n, int* fresh, int64_t max_rank);
int first_fresh_symbol(const Graph& g);

// One function per op family (each in its folder under src/ops).
void register_elementwise_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_reduction_ops(OpRegistry& r);
void register_linalg_ops(OpRegistry& r);
void register_control_ops(OpRegistry& r);

}  // namespace kiln
