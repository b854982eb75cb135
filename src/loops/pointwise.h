// Pointwise kernels of the loop-level IR: a scalar expression tree evaluated once per output element.
//
// A ScalarExpr is immutable and value-semantic (a shared pointer to a node), like loops::Expr. Every
// node knows its result dtype; the constructors check operand dtypes and never insert casts (the
// caller writes Cast explicitly). Loads read one input at a flat index that is a loops::Expr over
// the kernel's loop variables (index_vars()).
//
// Numeric semantics follow ONNX / numpy: Max and Min propagate NaN, comparisons with NaN are false,
// Sigmoid does not overflow for large |x|. Integer arithmetic wraps and Div truncates (ONNX's rule).
// Every operand is evaluated for every element (Where computes both branches), so the emitter gives
// the cases ONNX leaves undefined a harmless value instead of a trap: integer x / 0 is 0, and a NaN
// or out-of-range float cast to an integer gives the integer type's minimum.
//
// f16 and bf16 are storage types: a kernel may compute their arithmetic in f32 without rounding
// between the operations it fuses (as PyTorch's generated kernels do); what it stores, and an explicit
// Cast to a half type, is rounded to nearest even. Constants of a half type hold half values.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/dtype.h"
#include "loops/index_expr.h"

namespace kiln::loops {

enum class ScalarKind : uint8_t { Load, Constant, Unary, Binary, Where, Cast };
enum class UnaryOp : uint8_t { Neg, Abs, Exp, Log, Sqrt, Reciprocal, Relu, Sigmoid, Tanh, Erf, IsNaN, Not };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Pow, Max, Min, Equal, Less, Greater, And, Or };

std::string_view unary_name(UnaryOp op);
std::string_view binary_name(BinaryOp op);

// The dtypes pointwise kernels handle: f32, f64, f16, bf16, i32, i64, bool (a backend may take fewer:
// backend::Fusions::half_floats).
bool pointwise_dtype_supported(DType t);

struct ScalarNode;

class ScalarExpr {
 public:
  ScalarKind kind() const;
  DType dtype() const;
  int input() const;                               // Load: which kernel input
  const Expr& index() const;                       // Load: flat element index
  double constant_value() const;                   // Constant
  UnaryOp unary_op() const;                        // Unary
  BinaryOp binary_op() const;                      // Binary
  const std::vector<ScalarExpr>& operands() const; // Unary {x}, Binary {a, b}, Where {c, a, b}, Cast {x}
  const ScalarNode* node() const { return node_.get(); }

 private:
  explicit ScalarExpr(std::shared_ptr<const ScalarNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const ScalarNode> node_;
  friend ScalarExpr make_scalar(ScalarNode n);
};

struct ScalarNode {
  ScalarKind kind = ScalarKind::Constant;
  DType dtype = DType::f32;
  int input = -1;
  Expr index;
  double value = 0.0;
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  std::vector<ScalarExpr> ops;
};

// Checked constructors (a dtype mismatch is an InternalError: the lowering made a mistake).
ScalarExpr load(int input, Expr index, DType dtype);
// Integer and bool constants must be exact: integral, in range (bool: 0 or 1).
ScalarExpr constant(double value, DType dtype);
// Neg Abs Relu: numeric; Exp Log Sqrt Reciprocal Sigmoid Tanh Erf: float; IsNaN: float -> bool;
// Not: bool.
ScalarExpr unary(UnaryOp op, const ScalarExpr& x);
// Add Sub Mul Div Max Min: same numeric dtype; Pow: same float dtype; Equal Less Greater: same
// dtype -> bool; And Or: bool.
ScalarExpr binary(BinaryOp op, const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr where(const ScalarExpr& cond, const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr cast(DType dtype, const ScalarExpr& x);

// Shorthands.
ScalarExpr add(const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr sub(const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr mul(const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr div(const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr maximum(const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr minimum(const ScalarExpr& a, const ScalarExpr& b);
ScalarExpr erf(const ScalarExpr& x);
ScalarExpr is_nan(const ScalarExpr& x);

// Readable form for messages and tests: add(load0[(x0 * 64 + x1)], 1.5:f32).
std::string to_string(const ScalarExpr& e);

struct TensorDesc {
  DType dtype = DType::f32;
  std::vector<Expr> sizes;  // constants or size symbols
};

// out[x0, ..., xn-1] = body, for every index of the output's sizes.
struct PointwiseKernel {
  std::string name;  // a C identifier: the entry point's name
  std::vector<TensorDesc> inputs;
  TensorDesc output;
  ScalarExpr body = constant(0.0, DType::f32);
};

// The loop variables x0 .. x{rank-1} over the output's sizes, for building Load indices.
std::vector<Expr> index_vars(const PointwiseKernel& k);
// Input i read at the current output index with numpy broadcasting (right-aligned; size-1 dims and
// missing leading dims read index 0).
ScalarExpr load_broadcast(const PointwiseKernel& k, int input);

// The size symbols of a kernel (sizes and load indices), in canonical order: the order in which the
// generated function expects their runtime values.
std::vector<Expr> kernel_symbols(const PointwiseKernel& k);

// Checks that the body's dtype is the output's, loads name valid inputs with their dtypes and index
// only the kernel's loop variables. InternalError otherwise.
void validate(const PointwiseKernel& k);

}  // namespace kiln::loops
