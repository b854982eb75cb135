// CUDA C++ both tensor-core attention kernels (mma.sync: cuda_attention_mma_source.cpp; wgmma:
// cuda_attention_wgmma_source.cpp) share, after their #defines of D and KT: the mask's words, the scores
// of a tile, the online-softmax step and the output's store. A thread holds two query rows of a tile's
// scores as s[KT / 8][4] (s[n][i]: row i / 2, key 8 n + 2 t + i % 2, t = lane % 4) and of the output as
// o[D / 8][4] (columns in place of keys): the fragment layout of mma.sync m16n8k16 and of wgmma m64nN.
#pragma once
#include <string>

#include "backend/cuda/cuda_attention.h"

namespace kiln::backend::cuda {

std::string attention_tile_helpers(const AttentionSpec& spec);

// With a mask, the kernel's statements that find this thread's two mask rows (mask_row0, mask_row1 from
// row0 and row0 + 8; rows past sq read row sq - 1) and, in the tile loop, load their words for the tile at
// key0 into mask_w; nothing without one.
std::string attention_mask_rows(const AttentionSpec& spec);
std::string attention_mask_load(const AttentionSpec& spec);

}  // namespace kiln::backend::cuda
