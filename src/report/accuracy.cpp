#include "report/accuracy.h"

#include <fmt/format.h>

#include "runtime/compare.h"

namespace kiln::report {

OutputsAccuracy compare_outputs(const Outputs& result, const Outputs& reference,
                                const std::function<const Outputs&()>& fp64_oracle, double tol, double multiplier) {
  OutputsAccuracy acc;
  acc.pass = true;
  acc.rule = "allclose";
  auto fail = [&](const std::string& rule) {
    if (acc.pass) acc.rule = rule;  // the first failure names the verdict
    acc.pass = false;
  };
  for (const auto& [name, res] : result) {
    std::string line;
    auto ref = reference.find(name);
    if (ref == reference.end()) {
      fail("missing");
      line = fmt::format("{}: missing in the reference", name);
    } else {
      CloseResult close = all_close(res, ref->second, tol, tol, true);
      AccuracyResult r;
      if (close.ok) {  // the rule's first branch; no oracle needed
        r.pass = true;
        r.rule = "allclose";
        r.detail = fmt::format("max abs err {:.3g}", close.max_abs_err);
      } else {
        const Outputs& oracle = fp64_oracle();
        acc.used_oracle = true;
        auto o = oracle.find(name);
        if (o == oracle.end()) {
          r.rule = "missing";
          r.detail = "no such output in the fp64 oracle";
        } else {
          r = accuracy_rule(res, ref->second, o->second, tol, multiplier);
        }
      }
      if (!r.pass) fail(r.rule);
      else if (r.rule != "allclose" && acc.pass) acc.rule = r.rule;
      line = fmt::format("{}: {} {}, {}", name, r.rule, r.pass ? "pass" : "FAIL", r.detail);
    }
    acc.detail += (acc.detail.empty() ? "" : "; ") + line;
  }
  if (result.empty()) {
    acc.pass = false;
    acc.rule = "missing";
    acc.detail = "no outputs";
  }
  return acc;
}

OutputsAccuracy compare_low_precision(const Outputs& result, const Outputs& reference) {
  OutputsAccuracy acc;
  acc.pass = !result.empty();
  acc.rule = result.empty() ? "missing" : "low-precision";
  if (result.empty()) acc.detail = "no outputs";
  for (const auto& [name, res] : result) {
    auto ref = reference.find(name);
    std::string line;
    if (ref == reference.end()) {
      if (acc.pass) acc.rule = "missing";
      acc.pass = false;
      line = fmt::format("{}: missing in the reference", name);
    } else {
      const LowPrecisionResult r = low_precision_rule(res, ref->second);
      acc.pass = acc.pass && r.pass;
      line = fmt::format("{}: low-precision {}, {}", name, r.pass ? "pass" : "FAIL", r.detail);
    }
    acc.detail += (acc.detail.empty() ? "" : "; ") + line;
  }
  return acc;
}

}  // namespace kiln::report
