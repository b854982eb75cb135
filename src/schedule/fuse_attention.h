// Attention as one group: the chain exporters emit for scaled dot-product attention,
//   P = Softmax(MatMul(Q * cq, K^T * ck) + M)      (each scale and the additive mask optional)
//   P = Where(IsNaN(P), 0, P)                       (the guard for fully masked rows, optional)
//   O = MatMul(P, V)
// with Q [B,H,Sq,D], K^T [B,H,D,Sk], V [B,H,Sk,D] each read through the Transpose that made it from a
// [B,S,H,D] view (the group absorbs the Transpose when it is its only use), M broadcast to [B,H,Sq,Sk],
// and the Transpose that turns O back into [B,Sq,H,D], when it is O's only use. A [B,S,H,D] operand
// that a Reshape made from one output of a Split along the last axis of a [B,S,N] tensor (the merged
// Q, K, V projection) is read as columns of that tensor: the Reshape joins the group, and the Split
// too once every one of its outputs is read so. A backend that has an
// attention kernel computes it without the [B,H,Sq,Sk] scores (backend::Fusions::attention); the nodes
// of a group it refuses stay with the other passes.
#pragma once
#include <array>
#include <vector>

#include "kiln/graph.h"

namespace kiln::schedule {

// Columns [column, column + heads * D) of a [B,S,N] tensor, read as [B,S,heads,D].
struct ColumnSlice {
  int64_t column = -1;  // -1: the operand is a rank-4 tensor of its own
  int64_t heads = 0;
};

struct AttentionGroup {
  std::vector<NodeId> nodes;    // topological order; the last one makes `output`
  // The tensors read (Transposes looked through): rank 4, or rank 3 where the slice says so.
  ValueId q = kNoValue, k = kNoValue, v = kNoValue;
  ColumnSlice q_slice, k_slice, v_slice;
  ValueId mask = kNoValue;      // additive, broadcast to [B,H,Sq,Sk]; kNoValue: none
  ValueId output = kNoValue;
  // How each operand's dims map to [B,H,S,D] (K: [B,H,Sk,D]): view dim i is dim perm[i] of the tensor
  // read. The output: O [B,H,Sq,D] dim i is `output`'s dim out_perm[i].
  std::array<int, 4> q_perm{0, 1, 2, 3}, k_perm{0, 1, 2, 3}, v_perm{0, 1, 2, 3}, out_perm{0, 1, 2, 3};
  double scale = 1.0;   // the product of the scalar factors on Q and K^T
  bool guard = false;   // fully masked (or NaN) rows give zeros, not NaN
  int64_t head_dim = 0;  // D (static)
};

// Groups in topological order of their outputs; nodes with claimed[node] != 0 are never taken.
std::vector<AttentionGroup> find_attention_groups(const Graph& g, const std::vector<char>& claimed);

}  // namespace kiln::schedule
