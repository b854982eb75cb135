// Graph passes, one per file. Each takes the graph and the options and rewrites the graph in place.
#pragma once
#include <map>
#include <string>

#include "kiln/graph.h"
#include "kiln/options.h"

namespace kiln {

// Infers every value's type from the inputs and constants, in topological order. Shapes stay symbolic
// where they are; a contradiction (rank mismatch, bad broadcast) is a user error naming the node.
// With `fold`, each node whose inputs are constant is evaluated right after its inference (within
// options.constant_fold_bytes per output), so the nodes after it see a constant: the Shape -> Gather ->
// Concat -> Reshape chains exporters emit fold in one pass. Returns the number of nodes folded.
int infer_shapes(Graph& g, const Options& options, bool fold = false);

// Replaces symbolic dims by the given sizes in every value's type (run infer_shapes after).
void bind_dims(Graph& g, const std::map<std::string, int64_t>& sizes);

// Evaluates `n` if its inputs are all constant (or it is Shape/Size of a statically shaped value) and
// its outputs fit options.constant_fold_bytes: the outputs become constants, the node is left dead
// (no outputs) for Graph::remove_dead. Returns whether it folded.
bool fold_node(Graph& g, Node& n, const Options& options);

// For --precision bf16 / fp16: every f32 value becomes `to` (f16 or bf16). Constants are converted
// once, saturating (a finite value beyond the type's range becomes its largest finite value, a tiny
// non-zero one its smallest, as ONNX Runtime's float16 converter does: a mask of finfo(f32).min stays a
// large negative number, not -inf, whose 0 * -inf would be NaN); Cast targets, Constant and
// ConstantOfShape values likewise. The model's interface keeps its types: an f32 input is cast to `to`
// where it enters, an f32 output back to f32 where it leaves. Inputs ONNX requires in f32 (Resize's
// scales and roi) stay f32.
void narrow_floats(Graph& g, const Options& options, DType to);

// For a backend whose library calls compute in f32 (the CPU): every MatMul, Gemm, Conv and
// ConvTranspose of f16 / bf16 data reads f32 operands (constants converted once, other values through
// a Cast) and writes f32 that a Cast rounds back to the half type (widen_half_products.cpp). Returns
// the number of products rewritten.
int widen_half_products(Graph& g, const Options& options);

// MatMuls that read one activation with constant 2-D weights of one dtype and K (each maybe with the
// Add of a constant 1-D bias) become one MatMul, one bias Add and a Split along the last axis that
// makes the values they made (merge_sibling_matmuls.cpp). Returns the number of merged sets.
int merge_sibling_matmuls(Graph& g);

// Reshape(X [b.., K] -> [M, K]) -> Gemm (alpha and beta 1, no transA, constant B and C) -> Reshape(->
// [b.., N]) becomes MatMul(X, B or B^T) and the Add of C as [N], so that what follows the product fuses
// with it (gemm_as_matmul.cpp). Returns the number of Gemms rewritten.
int gemm_as_matmul(Graph& g);

// MatMul(DequantizeLinear(a), DequantizeLinear(w)) becomes Mul(Cast<f32>(MatMulInteger(a, w, a_zero_point)),
// a_scale * w_scale) where a is u8 / i8 with scalar scale and zero point, w a constant i8 [K, N] with zero
// point 0 and a scalar or per-column scale (integer_matmuls.cpp; the DequantizeLinears as the importer
// writes them, before folding: types inferred, nothing folded yet). Returns the number rewritten.
int integer_matmuls(Graph& g, const Options& options);

// CastLike(x, like) becomes Cast(x, to = like's element type) (cast_like_as_cast.cpp; types must be
// inferred). Returns the number rewritten.
int cast_like_as_cast(Graph& g);

// A node with the op, attributes and (equal-constant) inputs of an earlier one is replaced by it, equal
// constants are one (eliminate_common_subexpressions.cpp; after type inference: only nodes whose outputs
// have the same types merge). Returns the number of nodes removed.
int eliminate_common_subexpressions(Graph& g);

// Every If whose cond is a constant becomes the nodes of the branch it takes (inline_constant_ifs.cpp;
// after infer_shapes). Returns the number of Ifs replaced.
int inline_constant_ifs(Graph& g);
// inline_constant_ifs, then infer_shapes with folding (which may decide nested Ifs), until no If is
// left with a constant cond. Returns the number of Ifs replaced.
int fold_and_inline_ifs(Graph& g, const Options& options);

// For the fp64 reference path: every floating-point value, constant and Cast target becomes f64.
void widen_to_f64(Graph& g, const Options& options);

// The whole pipeline before execution: bound dims, shapes with folding, dead code. Prints the IR after
// each step when options.debug has "ir".
void prepare_graph(Graph& g, const std::map<std::string, int64_t>& dims, const Options& options);

// KILN_DEBUG=ir prints the IR after a step; --dump-dir writes it as <step>_<after>.ir.
void dump_ir(const Graph& g, const Options& options, int step, const char* after);

}  // namespace kiln
