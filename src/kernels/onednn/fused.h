// Library calls with fused epilogues, for compiled mode: oneDNN matmul and convolution that apply a
// bias, activations and a residual add as post-ops, with constant weights reordered once into the
// layout the primitive asks for (per layout, not per call). Primitives are cached per run-time shape
// in each object; run() is const and may be called from many threads at once.
// Callers handle zero-size tensors (and K == 0) themselves: run() must not be called with them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/onednn/onednn.h"

namespace kiln::onednn {

// silu: x * sigmoid(x) (oneDNN's swish); hard_swish: x * max(min(x / 6 + 0.5, 1), 0).
enum class Activation : uint8_t { none, relu, tanh, sigmoid, gelu_erf, gelu_tanh, silu, hard_swish };

// The type a product reads its operands in. bf16: the f32 activations are rounded to bf16 (nearest
// even) on each call and the constant weights once, into the primitive's layout; the sums and the
// epilogue stay f32 (oneDNN's AVX512_BF16 / AMX kernels). Inputs and outputs are f32 either way.
enum class Operands : uint8_t { f32, bf16 };

// What follows the product, in this order: y = act_after(act(alpha * acc + bias) + residual).
struct Epilogue {
  float alpha = 1.f;
  std::vector<float> bias;  // one per output channel (matmul: per column); empty: none
  Activation act = Activation::none;
  bool residual = false;  // a tensor of exactly the output's shape, plain row-major
  Activation act_after = Activation::none;
};

// The epilogue's steps in order. A run may let oneDNN do only the first `steps` of them and finish
// the rest with apply_epilogue_plain on the plain output.
enum EpilogueStep : int { kStepAlpha, kStepBias, kStepAct, kStepResidual, kStepActAfter, kNumEpilogueSteps };

// oneDNN's relu maps NaN to 0 (its vmaxps keeps the zero), where ONNX keeps NaN: the first step
// whose oneDNN form may differ from ONNX on NaN input; kNumEpilogueSteps if none.
int first_nan_unsafe_step(const Epilogue& e);

// Applies steps [from, kNumEpilogueSteps) in place to an output of n elements whose channel for
// element i is (i / inner) % channels, or, with channels in blocks of `block` innermost (nChw16c: block
// 16, inner H * W), ((i / (inner * block)) * block + i % block) % channels. `residual` has the output's
// layout (needed when the residual step is applied here). ONNX semantics (relu keeps NaN).
void apply_epilogue_plain(const Epilogue& e, int from, float* y, int64_t n, int64_t inner, int64_t channels,
                          const float* residual, int64_t block = 1);

// True if any of the n values is NaN or infinite (parallel, vectorised scan).
bool any_nonfinite(const float* x, int64_t n);
// The largest biased exponent field (0..255) among the n values: 255 where one is NaN or infinite, 0 for
// zeros and subnormals only (parallel, vectorised scan).
uint32_t max_exponent_field(const float* x, int64_t n);

// How many constant weights this process has prepared in a primitive's layout so far (matmul and
// convolution; one per weight and layout): tests use it to see that a candidate that lost, or was never
// offered, left the weights alone.
uint64_t prepared_weight_layouts();

// C = epilogue(A x B) through the matmul primitive. A and C as in MatmulDesc (A may be strided, e.g.
// transposed; C contiguous). B is either constant (2-D [K, N], strided, given at construction) or
// given per call (any rank, like MatmulDesc). The bias broadcasts along C's last dim.
class FusedMatmul {
 public:
  // Constant weights, kept alive by `owner`; the prepacked copies are made lazily, once per layout.
  FusedMatmul(int64_t K, int64_t N, std::vector<int64_t> b_strides, std::shared_ptr<const void> owner,
              const float* b, Epilogue epilogue, Operands operands = Operands::f32);
  // Weights given per call.
  explicit FusedMatmul(Epilogue epilogue, Operands operands = Operands::f32);
  ~FusedMatmul();
  FusedMatmul(const FusedMatmul&) = delete;
  FusedMatmul& operator=(const FusedMatmul&) = delete;

  struct Call {
    MatmulDesc desc;  // b_dims / b_strides ignored for constant weights (then a is [rows, K], c [rows, N])
    const float* a = nullptr;
    const float* b = nullptr;  // per-call weights only
    const float* residual = nullptr;
    float* c = nullptr;
    int steps = kNumEpilogueSteps;  // epilogue steps oneDNN applies
  };
  // False when oneDNN has no implementation for the case.
  bool run(const Call& call) const;
  // Creates (and caches) the primitive for a shape ahead of the first run; prepacks the weights.
  bool prepare(const Call& shape_only) const;
  const Epilogue& epilogue() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// How a convolution computes its sums. winograd: oneDNN's Winograd kernels (F(2x2,3x3) or F(4x4,3x3)
// tiles: about half the multiplies of the direct kernel, and a few times its rounding error, still far
// inside an f32 product's tolerance), for 2-D 3x3 windows at stride 1 with f32 operands. The
// transforms mix the inputs of a tile, so a NaN or infinity would reach outputs whose windows never
// held it, and huge values could overflow where the direct sums do not: a call whose input holds a
// value of magnitude 2^64 or more (NaN and infinities included) runs the direct kernel instead, as does
// one oneDNN has no Winograd kernel for, and weights of magnitude 2^32 or more never run Winograd.
enum class ConvAlgorithm : uint8_t { direct, winograd };
const char* conv_algorithm_name(ConvAlgorithm a);

// Convolution in ONNX layouts (as ConvDesc) with constant weights [OC, C/groups, kernel..] and the
// epilogue's bias as the convolution's bias. Source and destination are plain NC[D]HW for the caller
// or, where the call says so, blocked nChw16c; inside, the primitive picks its layouts (a blocked
// tensor's is fixed) and the residual is reordered into the destination before a sum post-op.
class FusedConv {
 public:
  FusedConv(std::vector<int64_t> weights_dims, int64_t groups, std::shared_ptr<const void> owner, const float* w,
            Epilogue epilogue, Operands operands = Operands::f32, ConvAlgorithm algorithm = ConvAlgorithm::direct);
  ~FusedConv();
  FusedConv(const FusedConv&) = delete;
  FusedConv& operator=(const FusedConv&) = delete;

  struct Call {
    ConvDesc desc;  // weights_dims and groups must be the constructor's
    const float* src = nullptr;
    const float* residual = nullptr;
    float* dst = nullptr;
    int steps = kNumEpilogueSteps;  // oneDNN applies these; run() finishes the rest (apply_epilogue)
    // The caller's tensors in oneDNN's blocked layout nChw16c rather than plain (2-D, channels a multiple
    // of 16): the primitive reads and writes them as they are.
    bool blocked_src = false, blocked_residual = false, blocked_dst = false;
    // max_exponent_field of src where the caller has scanned it (its NaN guard), else -1: run() scans it
    // itself when Winograd must know.
    int src_max_exponent = -1;
  };
  bool run(const Call& call) const;
  // Applies epilogue steps [from, kNumEpilogueSteps) to the caller's dst with ONNX semantics, in its
  // layout (the residual reordered to it where theirs differ).
  void apply_epilogue(const Call& call, int from) const;
  // Creates (and caches) the primitive of the constructor's algorithm for a shape: false where oneDNN has
  // none (a Winograd kernel's run then takes the direct one).
  bool prepare(const Call& shape_only) const;
  const Epilogue& epilogue() const;
  // The algorithm asked for, direct where the weights rule Winograd out.
  ConvAlgorithm algorithm() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::onednn
