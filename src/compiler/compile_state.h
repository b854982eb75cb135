// What the compiler's passes share while a compile runs (compile.cpp lists them).
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "compiler/plan.h"
#include "kiln/graph.h"
#include "kiln/options.h"
#include "schedule/fusion_target.h"

namespace kiln::compiler {

struct CompileState {
  Graph& graph;
  const Options& options;
  const backend::Backend& backend;
  std::unique_ptr<backend::BackendCompile> job;  // the backend's side of this compile
  schedule::FusionTarget target;                 // set by route_softmax
  std::vector<Step> fused;                       // a step per fusion group with a kernel
  std::vector<std::unique_ptr<backend::Kernel>> kernels;   // Step::kernel indexes these
  std::vector<backend::GeneratedGroup> generated;          // row and pointwise groups, compiled together
  std::vector<int32_t> generated_group;                    // their Graph::groups index
  // Per node: no fusion pass may take it (f16 / bf16 without Fusions::half_floats; with half_generated,
  // only until the generated-kernel passes).
  std::vector<char> unfusable;

  // Which nodes a fusion pass already took (their Node::group), or may not take (unfusable).
  std::vector<char> claimed() const;
  // A step computing `nodes` (it runs where the last one stood) on `kernel`, which makes `outputs` in order.
  void add_fused_step(StepKind kind, const std::vector<NodeId>& nodes, const std::vector<ValueId>& inputs,
                      std::vector<ValueId> outputs, std::unique_ptr<backend::Kernel> kernel, std::string label);
};

// The passes of compile() that need more than a line, one file each.
void fuse_attention_calls(CompileState& s);        // fuse_attention_calls.cpp: attention groups + the backend's kernels
std::string route_softmax(CompileState& s);        // route_softmax.cpp: the router, once; returns its explanation
void fuse_library_calls(CompileState& s);          // fuse_library_calls.cpp: groups + the backend's library kernels
void fuse_row_kernels(CompileState& s);            // fuse_generated.cpp
void fuse_pointwise_kernels(CompileState& s);      // fuse_generated.cpp
void compile_generated_kernels(CompileState& s);   // fuse_generated.cpp: the backend compiles them together
std::string plan_steps(CompileState& s, struct Executable& exe);  // plan_steps.cpp: steps, node kernels, memory; the plan text

}  // namespace kiln::compiler
