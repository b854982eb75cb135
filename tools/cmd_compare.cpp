// kiln compare RESULT REFERENCE ORACLE: the accuracy rule of PyTorch's benchmark runner on folders of
// .npy outputs (as `kiln run --output-dir` and scripts/ort_run.js write them).
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "kiln/tensor_io.h"
#include "runtime/compare.h"
#include "support/error.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace fs = std::filesystem;
namespace {

struct CompareArgs {
  std::string result, reference, oracle;
  double tol = 1e-4;
  double multiplier = 2.0;
  double max_oracle_rel = 1e-3;
  bool low_precision = false;
};

int run(const CompareArgs& a, const Options& options) {
  for (const std::string* dir : {&a.result, &a.reference, &a.oracle}) {
    std::error_code ec;
    if (!fs::is_directory(*dir, ec)) user_error("compare: {} is not a folder of .npy files", *dir);
  }
  int failed = 0, passed = 0;
  for (const auto& entry : fs::directory_iterator(a.reference)) {
    if (entry.path().extension() != ".npy") continue;
    std::string file = entry.path().filename().string();
    fs::path res_path = fs::path(a.result) / file, oracle_path = fs::path(a.oracle) / file;
    if (!fs::exists(res_path) || !fs::exists(oracle_path)) {
      std::printf("FAIL %s: missing in %s\n", file.c_str(), fs::exists(res_path) ? a.oracle.c_str() : a.result.c_str());
      ++failed;
      continue;
    }
    Tensor res = read_npy(res_path.string(), options), ref = read_npy(entry.path().string(), options),
           oracle = read_npy(oracle_path.string(), options);
    double oracle_rel = relative_l2(oracle, ref);
    bool oracle_ok = oracle_rel <= a.max_oracle_rel;
    bool rule_pass = false;
    std::string rule, detail;
    if (a.low_precision) {
      LowPrecisionResult r = low_precision_rule(res, ref);
      rule_pass = r.pass;
      rule = "low-precision";
      detail = r.detail;
    } else {
      AccuracyResult r = accuracy_rule(res, ref, oracle, a.tol, a.multiplier);
      rule_pass = r.pass;
      rule = r.rule;
      detail = r.detail;
    }
    bool pass = rule_pass && oracle_ok;
    std::printf("%s %s: rule %s, %s; oracle vs reference relative L2 %.3g%s\n", pass ? "PASS" : "FAIL", file.c_str(),
                rule.c_str(), detail.c_str(), oracle_rel, oracle_ok ? "" : " (too far: the oracle disagrees)");
    (pass ? passed : failed)++;
  }
  if (passed + failed == 0) user_error("no .npy files in {}", a.reference);
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "accuracy of RESULT against REFERENCE with an fp64 ORACLE (PyTorch benchmark runner's rule)");
  cmd->add_option("result", args->result, "folder of .npy outputs under test")->required();
  cmd->add_option("reference", args->reference, "folder of .npy outputs of the reference (e.g. ONNX Runtime)")->required();
  cmd->add_option("oracle", args->oracle, "folder of fp64 outputs (kiln run --mode reference)")->required();
  cmd->add_option("--tol", args->tol, "allclose tolerance (default 1e-4)");
  cmd->add_option("--multiplier", args->multiplier, "RMSE multiplier (default 2)");
  cmd->add_option("--max-oracle-rel", args->max_oracle_rel, "largest relative L2 between oracle and reference");
  cmd->add_flag("--low-precision", args->low_precision,
                "RESULT ran in bf16 / fp16: pass at cosine similarity >= 0.999 and relative L2 <= 2e-2 against "
                "REFERENCE (fp32 outputs)");
  return {cmd, [args](const Options& options) { return run(*args, options); }};
}

}  // namespace kiln::tools
