#include "compiler/compile.h"

#include <algorithm>

#include "compiler/compile_state.h"
#include "compiler/pass_list.h"
#include "lower/decompose.h"
#include "passes/passes.h"
#include "support/checked_math.h"
#include "support/error.h"
#include "support/stage_timer.h"

namespace kiln::compiler {
namespace {

// Ops the fusion passes do not know, rewritten into ones they do.
void decompose_graph(Graph& g, const Options& options) {
  lower::DecompositionTable decompositions;
  lower::register_decompositions(decompositions);
  if (lower::decompose(g, decompositions) > 0) infer_shapes(g, options);
}

// Inputs are allocated from their declared types (kiln run makes them): check their size first.
void check_input_sizes(const Graph& g, const Options& options) {
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    if (!is_static(v.type.shape)) continue;
    int64_t bytes = checked_mul(checked_numel(static_dims(v.type.shape), "input '" + v.name + "'"),
                                static_cast<int64_t>(dtype_size(v.type.dtype)), "input '" + v.name + "'");
    if (bytes > options.max_tensor_bytes)
      user_error("input '{}' ({}) takes {} bytes, more than max_tensor_bytes ({})", v.name, type_string(v.type), bytes,
                 options.max_tensor_bytes);
  }
}

// The `precision` setting: the dtype a compile narrows the model's f32 values to (f32: none).
DType precision_dtype(const Options& options) {
  if (options.precision == "fp32") return DType::f32;
  if (options.precision == "bf16") return DType::bf16;
  if (options.precision == "fp16") return DType::f16;
  user_error("precision must be fp32, bf16 or fp16, got '{}'", options.precision);
}

// Nodes reading or making an f16 / bf16 value: left to the node kernels on a backend whose fused
// kernels compute in f32 and f64 only.
std::vector<char> half_nodes(const Graph& g) {
  auto half = [&g](ValueId v) {
    return v != kNoValue && is_half(g.value(v).type.dtype);
  };
  std::vector<char> out(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    out[i] = std::any_of(n.inputs.begin(), n.inputs.end(), half) || std::any_of(n.outputs.begin(), n.outputs.end(), half);
  }
  return out;
}

// The plan is the compiler's to make: groups a graph arrives with (a parsed dump) are dropped.
void drop_fusion_groups(Graph& g) {
  g.groups.clear();
  for (Node& n : g.nodes) n.group = -1;
}

// Whether the graph holds an 8-bit constant (a quantized weight): the others skip integer_matmuls (and its dump).
bool has_8bit_constant(const Graph& g) {
  return std::any_of(g.values.begin(), g.values.end(), [](const Value& v) {
    return v.constant && (v.constant->dtype() == DType::u8 || v.constant->dtype() == DType::i8);
  });
}

}  // namespace

Executable compile(Graph graph, const backend::Backend& backend, const Options& options, Mode mode,
                   const std::map<std::string, int64_t>& dims) {
  Executable exe;
  exe.graph = std::move(graph);
  exe.widened = mode == Mode::reference;
  exe.runtime = &backend.runtime();
  Graph& g = exe.graph;
  const backend::Fusions fuse = mode == Mode::compiled ? backend.fusions(options) : backend::Fusions{};
  CompileState s{g, options, backend, backend.start_compile(options), {}, {}, {}, {}, {}, {}};

  PassList passes(g, options);
  passes.run("import", [&] { drop_fusion_groups(g); });
  passes.run("bind_dims", [&] { bind_dims(g, dims); });  // before inference: sizes from the inputs flow everywhere
  if (fuse.integer_matmul && has_8bit_constant(g))  // before folding, which would turn 8-bit weights into f32 ones
    passes.run("integer_matmuls", [&] { integer_matmuls(g, options); });
  passes.run("infer_shapes_fold", [&] {  // an If whose cond folds is replaced by its branch here
    infer_shapes(g, options, /*fold=*/true);
    fold_and_inline_ifs(g, options);
  });
  passes.run("cast_like_as_cast", [&] { cast_like_as_cast(g); });
  if (mode == Mode::compiled) passes.run("eliminate_common_subexpressions", [&] { eliminate_common_subexpressions(g); });
  if (mode == Mode::reference) passes.run("widen_to_f64", [&] { widen_to_f64(g, options); });
  const DType narrow_to = precision_dtype(options);
  if (narrow_to != DType::f32 && mode != Mode::reference) {  // the oracle stays the model's own fp64
    if (mode != Mode::compiled)
      user_error("precision {}: eager mode runs fp32 only (bf16 and fp16 are compiled modes')", options.precision);
    if (fuse.half_floats)
      passes.run("narrow_floats", [&] { narrow_floats(g, options, narrow_to); });
    else if (narrow_to == DType::f16)
      user_error("precision fp16: the {} backend has no fp16 products (fp16 is compiled with --device cuda)", backend.name());
    else if (!fuse.bf16_products)
      user_error("precision bf16: the {} backend runs bf16 products only where oneDNN has native bf16 kernels "
                 "(AVX512_BF16 or AMX), and this CPU has none", backend.name());
    // else the library kernels read bf16 operands (backend/cpu/library_kernel.h); the graph stays f32
  }
  // The CPU's products of a half graph on its f32 library (the Casts around them join generated kernels).
  if (fuse.half_generated && !fuse.half_floats) {
    const std::vector<char> half = half_nodes(g);  // an f32 graph has no such step (nor its dump)
    if (std::find(half.begin(), half.end(), 1) != half.end())
      passes.run("widen_half_products", [&] { widen_half_products(g, options); });
  }
  if (mode == Mode::compiled) passes.run("decompose", [&] { decompose_graph(g, options); });
  if (fuse.gemm_as_matmul) passes.run("gemm_as_matmul", [&] { gemm_as_matmul(g); });
  if (fuse.sibling_matmuls) passes.run("merge_sibling_matmuls", [&] { merge_sibling_matmuls(g); });
  if (!fuse.half_floats) s.unfusable = half_nodes(g);
  check_input_sizes(g, options);
  if (fuse.attention) passes.run("fuse_attention", [&] { fuse_attention_calls(s); });
  if (fuse.library || fuse.rows) passes.run_text("route_softmax", "route", [&] { return route_softmax(s); });
  if (fuse.library) passes.run("fuse_library", [&] { fuse_library_calls(s); });
  if (fuse.half_generated) s.unfusable.clear();  // the generated kernels below take half nodes
  if (fuse.rows) passes.run("fuse_rows", [&] { fuse_row_kernels(s); });
  if (fuse.pointwise) passes.run("fuse_pointwise", [&] { fuse_pointwise_kernels(s); });
  if (!s.generated.empty()) {
    const StageTimer timer(options, "compile_generated_kernels");
    compile_generated_kernels(s);
  }
  passes.run_text("plan", "fusion", [&] { return plan_steps(s, exe); });
  const StageTimer timer(options, "finish_tuning");
  exe.tuning = s.job->finish();
  return exe;
}

}  // namespace kiln::compiler
