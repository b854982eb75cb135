// Library calls with fused pointwise consumers: a MatMul / Gemm / Conv (f32; f16 and bf16 for a backend
// that computes in them) and the chain of nodes
// after it that oneDNN can apply as post-ops, in this order, each optional:
//   Conv only: BatchNormalization with constant parameters (folded into the weights at build);
//   MatMul only: Mul or Div by a scalar constant (folded into alpha: x / c as x * (1 / c));
//   Add of a constant bias per output channel (MatMul/Gemm: the last dim; Conv: dim 1);
//   an activation: Relu, Tanh, Sigmoid, or GELU in the erf or tanh form exporters emit; Conv only, also
//   SiLU as Mul(x, Sigmoid(x)) and HardSwish as decomposed (Mul(x, Max(Min(x / 6 + 0.5, 1), 0)));
//   Add of a non-constant tensor of exactly the output's type (a residual);
//   Relu.
// With a FusionTarget, also the softmax-family nodes the router sent to the library (softmax_route.h):
// the node alone, as a LibraryCore::softmax / log_softmax group; and, for a MatMul / Gemm group the
// backend will tune (kiln's GEMM code may run it), a tail: the pointwise consumers after those
// post-ops (gemm_tail.h), computed by generated code.
// With a FusionTarget whose folds_layer_norm accepts it, a MatMul group also takes the LayerNormalization
// in front of it (over the last axis, constant scale and bias): the backend folds it into the product
// (the group's first node; `norm`). Its output, where other nodes read it, is the group's second output
// (`norm_output`), provided those nodes all come after the group's last node.
// Every other intermediate value has all of its uses inside the group and is not a graph output. The group
// runs where its last node stood (the backend builds the call: BackendCompile::library_kernel).
#pragma once
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "schedule/fusion_target.h"

namespace kiln::schedule {

enum class LibraryCore : uint8_t {
  matmul,          // A [.., M, K] x constant B [K, N]
  batched_matmul,  // A [b.., M, K] x non-constant B [b.., K, N], rank 3 or 4, equal batch dims
  gemm,            // Gemm: constant B, C absent or a constant broadcast as [N]
  conv,            // Conv: constant weights and bias
  softmax,         // Softmax (f32, any axis) alone: oneDNN softmax_accurate
  log_softmax,     // LogSoftmax likewise: oneDNN softmax_log
};
// silu (x * Sigmoid(x)) and hard_swish (x * HardSigmoid(x) with alpha 1/6, beta 1/2, as HardSwish
// decomposes) join Conv groups only: the CUDA matmul has no such epilogue.
enum class LibraryActivation : uint8_t { none, relu, tanh, sigmoid, gelu_erf, gelu_tanh, silu, hard_swish };

struct LibraryGroup {
  std::vector<NodeId> nodes;    // topological order; the last one makes `output`
  std::vector<ValueId> inputs;  // everything the call reads, constants included, in the order run() gets them
  ValueId output = kNoValue;
  std::string label;            // e.g. "matmul+bias+gelu+add", for KILN_DEBUG=fusion and dumps

  // What the call computes. inputs[0] is the core's first input (A or X); then the core's other
  // inputs, the BatchNormalization parameters, the bias constant and the residual, where present.
  LibraryCore core = LibraryCore::matmul;
  NodeId core_node = -1;
  NodeId batchnorm = -1;     // conv only
  float scale = 1.f;         // matmul, batched_matmul: the folded scalar Mul / Div (the product's alpha)
  ValueId bias = kNoValue;   // the constant of the bias Add
  LibraryActivation act = LibraryActivation::none;
  int residual = -1;         // index into `inputs` of the residual, -1: none
  LibraryActivation act_after = LibraryActivation::none;  // relu or none
  bool tuned = false;        // the backend tunes its product (FusionTarget::tunes_gemm, asked once)
  // Tuned groups only (gemm_tail.h): pointwise nodes after the post-ops, in order; the value the first
  // reads; their non-scalar operands as indices into `inputs`.
  std::vector<NodeId> tail;
  ValueId tail_input = kNoValue;
  std::vector<int> tail_inputs;
  // A LayerNormalization folded into the product (matmul only): its node (nodes[0]); inputs[0] is then its
  // input X, and its scale and bias are the inputs at norm_scale and norm_bias (-1: no bias, zeros). Its
  // output is norm_output where nodes outside the group read it, else kNoValue.
  NodeId norm = -1;
  int norm_scale = -1, norm_bias = -1;
  ValueId norm_output = kNoValue;
  // Conv only: which of its tensors are in oneDNN's blocked layout nChw16c rather than plain NCHW
  // (blocked_layouts.h; all false unless assign_blocked_layouts set them).
  bool blocked_input = false, blocked_residual = false, blocked_output = false;
};

// Groups in topological order; no node in two groups; nodes for which claimed[node] != 0 are never
// taken. A MatMul with non-constant B makes a group only with at least one fused consumer.
std::vector<LibraryGroup> find_library_groups(const Graph& g, const std::vector<char>& claimed);
// The same, plus a group for each Softmax / LogSoftmax node whose route in target.routes is `library`,
// and a group for each bare batched MatMul the backend tunes (target.tunes_gemm: kiln's GEMM code may
// win on it). (The overload without a target routes no softmax: the fused route.)
std::vector<LibraryGroup> find_library_groups(const Graph& g, const std::vector<char>& claimed,
                                              const FusionTarget& target);

const char* activation_name(LibraryActivation a);

}  // namespace kiln::schedule
