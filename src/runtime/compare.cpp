#include "runtime/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

namespace kiln {
namespace {

bool same_shape(const Tensor& a, const Tensor& b) { return a.shape() == b.shape(); }

double rmse(const Tensor& a, const Tensor& oracle) {
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.as_double(i), y = oracle.as_double(i);
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    sum += (x - y) * (x - y);
    ++n;
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
}

}  // namespace

CloseResult all_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, bool allow_widen) {
  CloseResult r;
  if (!same_shape(actual, expected)) {
    r.ok = false;
    r.reason = fmt::format("shape {} != expected {}", actual.shape_string(), expected.shape_string());
    return r;
  }
  bool widen_ok = allow_widen && is_float(actual.dtype()) && is_float(expected.dtype());
  if (actual.dtype() != expected.dtype() && !widen_ok) {
    r.ok = false;
    r.reason = fmt::format("dtype {} != expected {}", dtype_name(actual.dtype()), dtype_name(expected.dtype()));
    return r;
  }
  bool exact = !is_float(expected.dtype());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.as_double(i), e = expected.as_double(i);
    bool good;
    if (exact) {  // same dtype: the bits (a u64 past 2^63 has no int64)
      const size_t size = dtype_size(expected.dtype());
      good = std::memcmp(static_cast<const char*>(actual.raw()) + static_cast<size_t>(i) * size,
                         static_cast<const char*>(expected.raw()) + static_cast<size_t>(i) * size, size) == 0;
    }
    else if (std::isnan(e) || std::isnan(a)) good = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a)) good = a == e;
    else {
      double err = std::fabs(a - e);
      r.max_abs_err = std::max(r.max_abs_err, err);
      good = err <= atol + rtol * std::fabs(e);
    }
    if (!good) {
      if (r.mismatches == 0) r.reason = fmt::format("element {}: {} != expected {}", i, a, e);
      ++r.mismatches;
    }
  }
  r.ok = r.mismatches == 0;
  if (!r.ok) r.reason = fmt::format("{} of {} elements differ; first: {}", r.mismatches, actual.numel(), r.reason);
  return r;
}

AccuracyResult accuracy_rule(const Tensor& result, const Tensor& reference, const Tensor& fp64_oracle,
                             double tol, double multiplier) {
  AccuracyResult a;
  if (!same_shape(result, reference) || !same_shape(result, fp64_oracle)) {
    a.rule = "shape";
    a.detail = fmt::format("shapes differ: {} vs {} vs oracle {}", result.shape_string(), reference.shape_string(),
                           fp64_oracle.shape_string());
    return a;
  }
  CloseResult close = all_close(result, reference, tol, tol, true);
  if (close.ok) {
    a.pass = true;
    a.rule = "allclose";
    a.detail = fmt::format("max abs err {:.3g}", close.max_abs_err);
    return a;
  }
  for (int64_t i = 0; i < result.numel(); ++i)
    if (std::isnan(result.as_double(i)) != std::isnan(reference.as_double(i))) {
      a.rule = "nan";
      a.detail = fmt::format("NaN placement differs at element {}", i);
      return a;
    }
  a.rule = "rmse";
  a.res_rmse = rmse(result, fp64_oracle);
  a.ref_rmse = rmse(reference, fp64_oracle);
  a.pass = a.res_rmse <= multiplier * a.ref_rmse + tol / 10.0;
  a.detail = fmt::format("rmse {:.3g} vs reference's {:.3g} (limit {}x + {:.1g}); allclose failed: {}", a.res_rmse,
                         a.ref_rmse, multiplier, tol / 10.0, close.reason);
  return a;
}

double relative_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i) {
    const double x = a.as_double(i), y = b.as_double(i);
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

LowPrecisionResult low_precision_rule(const Tensor& result, const Tensor& reference, double min_cosine,
                                      double max_rel_l2) {
  LowPrecisionResult r;
  if (!same_shape(result, reference)) {
    r.detail = fmt::format("shapes differ: {} vs {}", result.shape_string(), reference.shape_string());
    return r;
  }
  if (!is_float(result.dtype()) || !is_float(reference.dtype())) {
    CloseResult exact = all_close(result, reference, 0, 0);
    r.pass = exact.ok;
    r.cosine = r.pass ? 1 : 0;
    r.detail = exact.ok ? "equal" : exact.reason;
    return r;
  }
  double dot = 0, rr = 0, ee = 0;
  for (int64_t i = 0; i < result.numel(); ++i) {
    const double x = result.as_double(i), y = reference.as_double(i);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && x != y)) {
        r.detail = fmt::format("non-finite values differ at element {}: {} vs {}", i, x, y);
        return r;
      }
      continue;
    }
    dot += x * y;
    rr += x * x;
    ee += y * y;
  }
  r.cosine = rr > 0 && ee > 0 ? dot / std::sqrt(rr * ee) : (rr == ee ? 1.0 : 0.0);
  r.rel_l2 = relative_l2(result, reference);
  r.pass = r.cosine >= min_cosine && r.rel_l2 <= max_rel_l2;
  r.detail = fmt::format("cosine {:.6f} (min {}), relative L2 {:.3g} (max {:.3g})", r.cosine, min_cosine, r.rel_l2,
                         max_rel_l2);
  return r;
}

}  // namespace kiln
