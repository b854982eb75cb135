// kiln's fp64 reference for pointwise groups, linked without the op families a pointwise group never
// holds: an OpRegistry of its own with the elementwise ops and Transpose (op_registry() lives in
// src/ops/register_all.cpp, apart from OpRegistry, for this), so that test_cuda needs neither oneDNN nor
// OpenBLAS on the GPU machine.
// The kernels are the ones run_node calls in reference mode (KernelContext::reference: plain loops),
// and a group is run node by node as tests/common/interpreter_backend.h runs it.
#pragma once
#include <vector>

#include "kiln/graph.h"
#include "ops/registry.h"
#include "schedule/fuse_pointwise.h"

namespace kiln::backend::cuda::testing {

// The elementwise family and Transpose.
const OpRegistry& pointwise_reference_ops();

// Shape inference over every node of g (what passes/infer_shapes does, on pointwise_reference_ops()).
void infer_types(Graph& g);

// The group's output for `inputs` (one tensor per group.inputs entry, in that order). Floating values
// are widened to f64 before every node; a floating result is returned in f64 (never rounded back to
// the output's dtype), other results in their own dtype.
Tensor reference_group(const Graph& g, const schedule::PointwiseGroup& group, const std::vector<Tensor>& inputs);

}  // namespace kiln::backend::cuda::testing
