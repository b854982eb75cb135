// A LayerNormalization folded into the MatMul that reads it (schedule::LibraryGroup::norm), on the CUDA
// backend: which groups fold, the folded constants for the GEMM template's row_norm epilogue, and the
// unfolded path (kiln's LayerNorm row kernel, then the library product) that the route measures it
// against and falls back on.
//
// LN(x) W + b = rstd (x W' - mean colsum(W')) + (beta W + b), W' = diag(gamma) W: the template standardises
// the rows of x on the fly (GemmTemplateEpilogue::row_norm), so the LayerNorm needs no kernel of its own.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_gemm_route.h"
#include "kiln/graph.h"
#include "kiln/options.h"

namespace kiln::backend::cuda {

class ModuleCache;

// Whether the CUDA backend folds this group's LayerNorm (Backend::folds_layer_norm): setting
// cuda_fold_layer_norm, templates not off, a Hopper GPU (sm_90a: the wgmma template) and a group the
// template fuses whole: a bf16 / f16 MatMul with a constant 2-D weight of K and N multiples of 8, no scale,
// bias then erf GELU or ReLU then a residual, nothing after.
bool cuda_folds_layer_norm(const Graph& g, const schedule::LibraryGroup& group, const Options& options, bool sm90a);

// The folded constants for `group` (norm set) whose MatMul `core` has the constant weight W [K,N]; `bias`
// (one f32 per output column, or empty) gains beta W. Nullopt where a folded value is not finite (gamma W
// past fp16's range): the group then runs unfolded.
std::optional<RowNormFold> fold_layer_norm(const Graph& g, const Node& core, const schedule::LibraryGroup& group,
                                           std::vector<float>& bias);

// The group's LayerNorm alone as kiln's generated row kernel, and where its inputs are among the group's
// inputs (slots[i] for the kernel's input i).
struct NormRowKernel {
  std::unique_ptr<Kernel> kernel;
  std::vector<int> slots;
};
NormRowKernel make_norm_row_kernel(const CudaRuntime& runtime, const Graph& g, const schedule::LibraryGroup& group,
                                   const Options& options, ModuleCache& modules);

}  // namespace kiln::backend::cuda
