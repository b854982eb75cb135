// kiln check CASE_DIR...: runs ONNX test cases (model.onnx + test_data_set_*/input_*.pb, output_*.pb).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "kiln/graph.h"
#include "kiln/session.h"
#include "onnx/import.h"
#include "kiln/tensor_io.h"
#include "ops/registry.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"
#include "support/error.h"
#include "tools/commands.h"

namespace kiln::tools {
namespace fs = std::filesystem;
namespace {

struct CheckArgs {
  std::vector<std::string> cases;
  std::string mode = "eager";
  double rtol = 1e-3, atol = 1e-7;  // the ONNX backend test defaults
  bool quiet = false;
  std::string known_file;  // cases where kiln deliberately differs from the generated data
  std::string skips_file;  // every case expected to be skipped, each with (part of) its reason
};

// "case_name  reason" lines ("case_name@mode  reason": that mode only); '#' starts a comment.
std::map<std::string, std::string> read_case_list(const std::string& path, const char* flag) {
  std::map<std::string, std::string> known;
  if (path.empty()) return known;
  std::ifstream in(path);
  if (!in) user_error("{} {}: cannot read the file", flag, path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.find_first_of(" \t");
    if (space == std::string::npos) user_error("{} {}: line '{}' has no reason", flag, path, line);
    if (!known.emplace(line.substr(0, space), line.substr(line.find_first_not_of(" \t", space))).second)
      user_error("{} {}: case '{}' is listed twice", flag, path, line.substr(0, space));
  }
  return known;
}

enum class Outcome { passed, failed, skipped };

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) r.push_back(e.path());
  // input_10 after input_9: sort by the number after the prefix
  auto number = [&](const fs::path& p) {
    std::string s = p.stem().string().substr(prefix.size());
    return std::atoll(s.c_str());
  };
  std::sort(r.begin(), r.end(), [&](const fs::path& a, const fs::path& b) { return number(a) < number(b); });
  return r;
}

// Returns the outcome and a one-line detail.
std::pair<Outcome, std::string> check_case(const fs::path& dir, Mode mode, const CheckArgs& a, const Options& options) {
  fs::path model = dir / "model.onnx";
  if (!fs::is_regular_file(model)) return {Outcome::failed, "no model.onnx"};
  Graph graph = import_onnx(model.string(), options);
  for (const Node& n : graph.nodes)
    if (!op_registry().supports(n.op)) return {Outcome::skipped, fmt::format("operator {} is not supported", op_name(n.op))};

  double max_err = 0;
  auto sets = sorted_files(dir, "test_data_set_");
  if (sets.empty()) return {Outcome::failed, "no test_data_set_*"};
  // One session per case: every data set has the same input shapes in the ONNX suite.
  std::vector<std::string> input_names, output_names;
  for (ValueId v : graph.inputs) input_names.push_back(graph.value(v).name);
  for (ValueId v : graph.outputs) output_names.push_back(graph.value(v).name);
  std::vector<bool> input_bf16, output_bf16;
  for (ValueId v : graph.inputs) input_bf16.push_back(graph.value(v).type.dtype == DType::bf16);
  for (ValueId v : graph.outputs) output_bf16.push_back(graph.value(v).type.dtype == DType::bf16);
  std::optional<Session> session;
  for (const auto& set : sets) {
    auto in_files = sorted_files(set, "input_");
    auto out_files = sorted_files(set, "output_");
    if (in_files.size() != input_names.size())
      return {Outcome::failed, fmt::format("{} input files for {} inputs", in_files.size(), input_names.size())};
    std::map<std::string, Tensor> inputs;
    for (size_t i = 0; i < in_files.size(); ++i)
      inputs[input_names[i]] = read_tensor_pb(in_files[i].string(), options, nullptr, input_bf16[i]);
    if (!session) {
      std::map<std::string, int64_t> dims = resolve_dims(graph, inputs, {});
      session.emplace(Session::from_graph(std::move(graph), mode, options, dims));
    }
    auto outputs = session->run(inputs);
    if (out_files.size() != output_names.size())
      return {Outcome::failed, fmt::format("{} output files for {} outputs", out_files.size(), output_names.size())};
    for (size_t i = 0; i < out_files.size(); ++i) {
      Tensor expected = read_tensor_pb(out_files[i].string(), options, nullptr, output_bf16[i]);
      CloseResult r = all_close(outputs.at(output_names[i]), expected, a.rtol, a.atol, mode == Mode::reference);
      max_err = std::max(max_err, r.max_abs_err);
      if (!r.ok) return {Outcome::failed, fmt::format("output '{}': {}", output_names[i], r.reason)};
    }
  }
  return {Outcome::passed, fmt::format("max error {:.3g}", max_err)};
}

int run(const CheckArgs& a, const Options& options) {
  const std::optional<Mode> parsed = mode_from_name(a.mode);
  if (!parsed) user_error("--mode must be eager, reference or compiled");
  const Mode mode = *parsed;
  int passed = 0, failed = 0, skipped = 0;
  auto known = read_case_list(a.known_file, "--known");
  auto skips = read_case_list(a.skips_file, "--skips");
  for (const auto& c : a.cases) {
    fs::path dir(c);
    std::pair<Outcome, std::string> r;
    try {
      r = check_case(dir, mode, a, options);
    } catch (const UnsupportedError& e) {
      r = {Outcome::skipped, e.what()};
    } catch (const UserError& e) {
      r = {Outcome::failed, e.what()};
    }
    // "case@mode" lists a deviation of one mode only (the fp64 reference does not round to half types).
    auto k = known.find(dir.filename().string() + "@" + a.mode);
    if (k == known.end()) k = known.find(dir.filename().string());
    if (k != known.end()) {
      if (r.first == Outcome::failed) {
        r = {Outcome::skipped, fmt::format("known deviation: {} ({})", k->second, r.second)};
      } else if (r.first == Outcome::passed) {
        r = {Outcome::failed, "listed as a known deviation but passes: remove it from the list"};
      }
    }
    // With a skip list, every skip is listed with its reason, and a listed case that runs is reported.
    if (!a.skips_file.empty()) {
      auto s = skips.find(dir.filename().string());
      if (s == skips.end()) {
        if (r.first == Outcome::skipped && r.second.rfind("known deviation", 0) != 0)
          r = {Outcome::failed, fmt::format("skipped but not in the skip list: {}", r.second)};
      } else if (r.first == Outcome::passed) {
        r = {Outcome::failed, fmt::format("listed as skipped ({}) but passes: remove it from the skip list", s->second)};
      } else if (r.first == Outcome::skipped && r.second.find(s->second) == std::string::npos) {
        r = {Outcome::failed, fmt::format("skipped for another reason than the listed '{}': {}", s->second, r.second)};
      } else if (r.first == Outcome::failed) {
        r = {Outcome::failed, fmt::format("listed as skipped ({}) but fails: {}", s->second, r.second)};
      }
    }
    const char* label = r.first == Outcome::passed ? "PASS" : r.first == Outcome::failed ? "FAIL" : "SKIP";
    (r.first == Outcome::passed ? passed : r.first == Outcome::failed ? failed : skipped)++;
    if (!a.quiet || r.first == Outcome::failed)
      std::printf("%s %s: %s\n", label, dir.filename().string().c_str(), r.second.c_str());
  }
  std::printf("%d passed, %d failed%s\n", passed, failed, skipped ? fmt::format(", {} skipped", skipped).c_str() : "");
  return failed ? 1 : 0;
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "run ONNX test cases and compare with their expected outputs");
  cmd->add_option("cases", args->cases, "test case folders (model.onnx + test_data_set_*)")->required();
  cmd->add_option("--mode", args->mode, "eager (default), reference or compiled");
  cmd->add_option("--rtol", args->rtol, "relative tolerance (default 1e-3)");
  cmd->add_option("--atol", args->atol, "absolute tolerance (default 1e-7)");
  cmd->add_flag("--quiet", args->quiet, "print only failures and the summary");
  cmd->add_option("--known", args->known_file,
                  "file of 'case reason' lines ('case@mode reason': that mode only): deliberate deviations, counted "
                  "as skipped");
  cmd->add_option("--skips", args->skips_file,
                  "file of 'case reason' lines: every case expected to be skipped, the reason a part of kiln's "
                  "message; any other skip, and a listed case that runs, fails");
  return {cmd, [args](const Options& options) { return run(*args, options); }};
}

}  // namespace kiln::tools
