// The strided N-d loop behind every broadcasting elementwise op. Operand shapes are right-aligned
// against the output shape; size-1 output dims are dropped and neighbouring dims that every operand
// walks contiguously (or not at all) are merged. What remains is a list of "rows": the innermost dim,
// along which each operand is either contiguous (stride 1) or broadcast (stride 0), and an outer
// odometer. Same-shape operands collapse to one long row, [B,H,S,S] + [B,1,1,S] to rows of S with the
// mask reused, x + scalar to one row with a stride-0 operand.
//
// The work is split across threads by output element (not by row), so a single long row (the
// same-shape case) is parallel too.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ops/common.h"

namespace kiln::elementwise {

template <int N>
class BroadcastPlan {
 public:
  // `out` is the output shape; every operand shape must broadcast to it (checked by inference).
  BroadcastPlan(const std::vector<int64_t>& out, const std::array<const std::vector<int64_t>*, N>& ins) {
    numel_ = 1;
    for (int64_t d : out) numel_ *= d;
    std::array<std::vector<int64_t>, N> full;
    for (int k = 0; k < N; ++k) full[k] = broadcast_strides(*ins[k], out);
    // Walk from the innermost dim outward, merging a dim into the one inside it when every operand's
    // stride continues contiguously (stride_outer == stride_inner * size_inner; 0 == 0 * size too).
    for (size_t i = out.size(); i-- > 0;) {
      if (out[i] == 1) continue;
      if (!dims_.empty()) {
        bool mergeable = true;
        for (int k = 0; k < N; ++k)
          if (full[k][i] != strides_.back()[k] * dims_.back()) mergeable = false;
        if (mergeable) {
          dims_.back() *= out[i];
          continue;
        }
      }
      dims_.push_back(out[i]);
      std::array<int64_t, N> s{};
      for (int k = 0; k < N; ++k) s[k] = full[k][i];
      strides_.push_back(s);
    }
    if (dims_.empty()) {  // a scalar output, or all dims 1
      dims_.push_back(1);
      strides_.push_back(std::array<int64_t, N>{});
    }
    std::reverse(dims_.begin(), dims_.end());
    std::reverse(strides_.begin(), strides_.end());
    // The innermost stride is 0 (broadcast) or 1: every later dim of the operand has size 1.
    for (int k = 0; k < N; ++k) inner_contiguous_[k] = strides_.back()[k] != 0;
  }

  int64_t numel() const { return numel_; }
  int64_t row_length() const { return dims_.back(); }
  int rank() const { return static_cast<int>(dims_.size()); }
  // Whether operand k advances along the innermost dim (stride 1) or repeats one element (stride 0).
  bool inner_contiguous(int k) const { return inner_contiguous_[k]; }
  bool all_inner_contiguous() const {
    for (int k = 0; k < N; ++k)
      if (!inner_contiguous_[k]) return false;
    return true;
  }

  // Calls row(len, out_offset, in_offsets) for runs of at most one row, covering every output element
  // once; runs are spread across threads in chunks of at least `grain` elements. Offsets are in
  // elements; within a run operand k advances by inner_contiguous(k) per element.
  template <class RowFn>
  void run(int64_t grain, RowFn&& row) const {
    const int64_t inner = dims_.back();
    const int outer_rank = rank() - 1;
    parallel_for(numel_, grain, [&](int64_t begin, int64_t end) {
      // Coordinates of the first row of this chunk in the outer dims.
      std::array<int64_t, 16> idx_small{};
      std::vector<int64_t> idx_big;
      int64_t* idx = idx_small.data();
      if (outer_rank > 16) {
        idx_big.assign(static_cast<size_t>(outer_rank), 0);
        idx = idx_big.data();
      }
      std::array<int64_t, N> off{};
      int64_t r = begin / inner, col = begin % inner;
      for (int d = outer_rank - 1; d >= 0; --d) {
        idx[d] = r % dims_[static_cast<size_t>(d)];
        r /= dims_[static_cast<size_t>(d)];
        for (int k = 0; k < N; ++k) off[k] += idx[d] * strides_[static_cast<size_t>(d)][k];
      }
      int64_t pos = begin;
      while (pos < end) {
        int64_t len = std::min(inner - col, end - pos);
        std::array<int64_t, N> at;
        for (int k = 0; k < N; ++k) at[k] = off[k] + (inner_contiguous_[k] ? col : 0);
        row(len, pos, at);
        pos += len;
        col = 0;
        // Advance the odometer by one row.
        for (int d = outer_rank - 1; d >= 0; --d) {
          const auto& s = strides_[static_cast<size_t>(d)];
          for (int k = 0; k < N; ++k) off[k] += s[k];
          if (++idx[d] < dims_[static_cast<size_t>(d)]) break;
          for (int k = 0; k < N; ++k) off[k] -= s[k] * dims_[static_cast<size_t>(d)];
          idx[d] = 0;
        }
      }
    });
  }

 private:
  int64_t numel_ = 0;
  std::vector<int64_t> dims_;
  std::vector<std::array<int64_t, N>> strides_;
  std::array<bool, N> inner_contiguous_{};
};

}  // namespace kiln::elementwise
