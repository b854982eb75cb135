// Activations kept in oneDNN's blocked layout between convolutions. A library convolution's primitive
// reads and writes nChw16c (channels in blocks of 16, innermost); a plain NCHW tensor costs a reorder on
// the way in and another on the way out of every convolution (ResNet-18 at batch 1: 1.6 of 12 ms). A
// value made by one Conv group and read only by Conv groups, as their input X or their residual, stays
// blocked: its producer writes nChw16c and its readers read it so. Its logical shape does not change and
// its bytes are as many (the channels are a multiple of 16); nothing else may read it: never a graph
// output, never a node outside those groups.
#pragma once
#include <vector>

#include "kiln/graph.h"
#include "schedule/fuse_library.h"

namespace kiln::schedule {

// Sets blocked_input / blocked_residual / blocked_output on the Conv groups (2-D, f32) where the value
// qualifies; clears them elsewhere. Returns the number of blocked values.
int assign_blocked_layouts(const Graph& g, std::vector<LibraryGroup>& groups);

// The label's suffix that shows a group's layouts in plans and dumps: "" when every tensor is plain,
// else e.g. " [nChw16c: in, out]".
std::string blocked_layout_note(const LibraryGroup& group);

}  // namespace kiln::schedule
