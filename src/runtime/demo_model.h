// The bundled default model: a small transformer encoder made with the builder API, so that
// `kiln run` works with no file at all.
#pragma once
#include "kiln/graph.h"

namespace kiln {

// input_ids i64[batch~1, seq~32] -> logits f32[batch, seq, 1000]; 2 layers, hidden 64, 4 heads,
// GELU (erf form) feed-forward of 256, random weights from a fixed seed.
Graph demo_transformer();

}  // namespace kiln
