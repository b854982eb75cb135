// Comparing outputs: elementwise closeness (ONNX test cases) and the accuracy rule of PyTorch's
// benchmark runner (allclose at a tolerance, else fp64 RMSE within a multiple of the reference's own).
#pragma once
#include <string>

#include "kiln/tensor.h"

namespace kiln {

struct CloseResult {
  bool ok = true;
  double max_abs_err = 0;  // over finite pairs
  int64_t mismatches = 0;
  std::string reason;      // why not ok: shape, dtype, NaN placement, values
};

// |actual - expected| <= atol + rtol * |expected| elementwise; NaN must meet NaN, +-Inf its equal;
// integers and bools exactly. Shapes must match; dtypes must match unless allow_widen (f64 vs f32).
CloseResult all_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, bool allow_widen = false);

struct AccuracyResult {
  bool pass = false;
  std::string rule;        // "allclose" or "rmse"
  double res_rmse = 0;     // RMSE of `result` against the fp64 oracle
  double ref_rmse = 0;     // RMSE of `reference` against the fp64 oracle
  std::string detail;
};

// PyTorch's benchmark runner's rule: allclose(result, reference, tol, tol) passes; otherwise
// RMSE(result, oracle) <= multiplier * RMSE(reference, oracle) + tol / 10 passes. NaN placement
// must agree in all cases.
AccuracyResult accuracy_rule(const Tensor& result, const Tensor& reference, const Tensor& fp64_oracle,
                             double tol = 1e-4, double multiplier = 2.0);

// ||a - b|| / ||b|| over the pairs where both are finite (||a - b|| when b is all zeros).
double relative_l2(const Tensor& a, const Tensor& b);

struct LowPrecisionResult {
  bool pass = false;
  double cosine = 0;  // of result and reference over the finite pairs
  double rel_l2 = 0;  // ||result - reference|| / ||reference|| over the finite pairs
  std::string detail;
};

// The rule for a model run in bf16 / fp16 against its fp32 outputs: cosine similarity >= min_cosine and
// relative L2 <= max_rel_l2, NaN and infinities in the same places (integers and bools: equal).
LowPrecisionResult low_precision_rule(const Tensor& result, const Tensor& reference, double min_cosine = 0.999,
                                      double max_rel_l2 = 2e-2);

}  // namespace kiln
