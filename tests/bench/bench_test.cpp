// `kiln bench` and `kiln profile` end to end on a tiny model built here and saved as .onnx: the JSON
// records, the accuracy verdict, the ONNX Runtime peer (or a SKIPPED when it is not installed), the
// Chrome trace and the HTML report. No timing is asserted, only that times are there and ordered.
#include <gtest/gtest.h>

#include <set>

#include "bench/bench_cli.h"

namespace {
using namespace bench_cli;

void expect_sane_side(const json& r, const std::string& side) {
  SCOPED_TRACE(side);
  ASSERT_TRUE(r[side + "_ms"].is_number()) << r.dump(2);
  double p10 = r[side + "_p10_ms"], med = r[side + "_ms"], p90 = r[side + "_p90_ms"];
  EXPECT_GT(med, 0.0);
  EXPECT_LE(p10, med);
  EXPECT_LE(med, p90);
}

TEST_F(BenchCli, JsonRecordHasEverySideCompileTimesAndAccuracy) {
  Result r = kiln("bench " + model() + " --dim batch=3 --iters 3 --warmup 1 --threads 2 --json " + file("out.json") +
                  " --html " + file("out.html"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "| model | sizes | eager ms | compiled ms | ORT ms")) << r.out;
  json doc = read_json(file("out.json"));
  EXPECT_EQ(doc["threads"], 2);
  EXPECT_TRUE(doc["peer"].is_null());
  ASSERT_EQ(doc["records"].size(), 1u);
  const json& rec = doc["records"][0];
  EXPECT_EQ(rec["model"], "tiny");
  EXPECT_EQ(rec["dims"]["batch"], 3);
  expect_sane_side(rec, "eager");
  expect_sane_side(rec, "compiled");
  EXPECT_TRUE(rec.contains("ort_ms") && rec["ort_ms"].is_null());
  EXPECT_TRUE(rec["speedup_vs_ort"].is_null());
  EXPECT_NEAR(rec["speedup_vs_eager"].get<double>(), rec["eager_ms"].get<double>() / rec["compiled_ms"].get<double>(), 1e-9);
  EXPECT_GT(rec["compile_s_cold"].get<double>(), 0.0);
  EXPECT_GT(rec["compile_s_warm"].get<double>(), 0.0);
  EXPECT_EQ(rec["accuracy"], "pass") << rec.dump(2);
  EXPECT_EQ(rec["rule"], "allclose");  // a softmax of a small MLP agrees to 1e-4
  EXPECT_EQ(rec["accuracy_vs_eager"]["result"], "pass");
  EXPECT_TRUE(rec["accuracy_vs_ort"].is_null());
  EXPECT_EQ(rec["times_ms"]["eager"].size(), 3u);
  EXPECT_EQ(rec["times_ms"]["compiled"].size(), 3u);
  EXPECT_EQ(rec["ops"], 8);
  EXPECT_LE(rec["kernels"].get<int>(), rec["ops"].get<int>());
  ASSERT_FALSE(rec["top_kernels"].empty());
  EXPECT_GE(rec["top_kernels"][0]["ms"].get<double>(), rec["top_kernels"].back()["ms"].get<double>());

  std::string html = read_text(file("out.html"));
  EXPECT_TRUE(contains(html, "<!DOCTYPE html>"));
  EXPECT_TRUE(contains(html, "<svg"));
  EXPECT_TRUE(contains(html, ">tiny<"));
  EXPECT_TRUE(contains(html, "Sweep curves"));
  EXPECT_FALSE(contains(html, "<script"));  // self-contained and static
  for (size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1))  // nothing fetched
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 60);
}

TEST_F(BenchCli, HtmlRendersInHeadlessChromium) {
  if (system("command -v chromium >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "SKIPPED: chromium is not installed (apt-get install chromium) to render the HTML report";
  Result r = kiln("bench " + model() + " --dim batch=2 --iters 2 --warmup 0 --html " + file("render.html"));
  ASSERT_EQ(r.code, 0) << r.out;
  // --dump-dom prints the DOM after layout: the page parsed and its SVG elements exist.
  std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --dump-dom "
                    "file://" + file("render.html") + " 2>" + file("chromium.log");
  FILE* p = popen(cmd.c_str(), "r");
  std::string dom;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) dom.append(buf, n);
  int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(file("chromium.log"));
  EXPECT_TRUE(contains(dom, "<svg")) << dom.substr(0, 400);
  EXPECT_TRUE(contains(dom, "<rect")) << dom.substr(0, 400);
  EXPECT_TRUE(contains(dom, ">tiny<")) << dom.substr(0, 400);
  EXPECT_FALSE(contains(read_text(file("chromium.log")), "CONSOLE")) << read_text(file("chromium.log"));
}

TEST_F(BenchCli, HtmlDrawsTheSweepFilesItIsGiven) {
  // A GEMM sweep as `kiln sweep gemm --json` writes it: one chart per N, K and epilogue, M along x.
  json gemm = {{"records", json::array()}};
  for (int m : {1, 32, 128})
    for (const char* choice : {"template", "onednn"})
      gemm["records"].push_back({{"m", m}, {"n", 768}, {"k", 768}, {"epilogue", "bias+gelu"}, {"choice", choice},
                                 {"gflops", m * (choice[0] == 't' ? 1.5 : 1.0)}, {"chosen", choice[0] == 't'}});
  std::ofstream(file("gemm.json")) << gemm.dump();
  Result r = kiln("bench " + model() + " --dim batch=2 --iters 1 --warmup 0 --sweep " + file("gemm.json") + " --html " +
                  file("sweep.html"));
  ASSERT_EQ(r.code, 0) << r.out;
  std::string html = read_text(file("sweep.html"));
  EXPECT_TRUE(contains(html, "GEMM N=768 K=768, epilogue bias+gelu")) << html;
  EXPECT_TRUE(contains(html, "from " + file("gemm.json")));
  size_t chosen = 0;
  for (size_t at = html.find("(chosen)"); at != std::string::npos; at = html.find("(chosen)", at + 1)) ++chosen;
  EXPECT_EQ(chosen, 3u);  // one chosen point per M
  std::ofstream(file("bad.json")) << "{not json";
  r = kiln("bench " + model() + " --dim batch=2 --iters 1 --warmup 0 --sweep " + file("bad.json") + " --html " +
           file("bad.html"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "not JSON")) << r.out;
}

TEST_F(BenchCli, SuiteFileFindsModelsAndSaysHowToMakeMissingOnes) {
  std::ofstream(file("suite.txt")) << "# test suite\ntiny batch=2\n";
  Result r = kiln("bench --suite " + file("suite.txt") + " --zoo-dir " + (dir_ / "zoo").string() +
                  " --iters 2 --warmup 0 --threads 1 --json " + file("suite.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  json doc = read_json(file("suite.json"));
  ASSERT_EQ(doc["records"].size(), 1u);
  EXPECT_EQ(doc["records"][0]["dims"]["batch"], 2);
  EXPECT_EQ(doc["records"][0]["accuracy"], "pass");

  std::ofstream(file("missing.txt")) << "tiny batch=2\nbert batch=1 seq=8\n";
  r = kiln("bench --suite " + file("missing.txt") + " --zoo-dir " + (dir_ / "zoo").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "make_zoo_weights.py bert")) << r.out;
  EXPECT_FALSE(contains(r.out, "[bench tiny]")) << "must refuse before running anything: " << r.out;

  std::ofstream(file("bad.txt")) << "tiny batch=two\n";
  r = kiln("bench --suite " + file("bad.txt") + " --zoo-dir " + (dir_ / "zoo").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "bad.txt:1: expected SYMBOL=SIZE")) << r.out;
}

TEST_F(BenchCli, ZeroToleranceJudgesByTheFp64Oracle) {
  // allclose at 0 fails unless compiled and eager agree bit for bit; then the RMSE rule needs the oracle.
  Result r = kiln("bench " + model() + " --dim batch=5 --iters 1 --warmup 0 --tol 0 --json " + file("tol.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const json rec = read_json(file("tol.json"))["records"][0];
  EXPECT_EQ(rec["accuracy"], "pass") << rec.dump(2);
  EXPECT_EQ(rec["rule"], "rmse") << rec.dump(2);
  EXPECT_EQ(rec["oracle"], "fp64 reference run");
  EXPECT_TRUE(contains(rec["accuracy_vs_eager"]["detail"].get<std::string>(), "rmse")) << rec.dump(2);
  EXPECT_TRUE(contains(r.out, "running the fp64 reference")) << r.out;
}

TEST_F(BenchCli, SaysHowToInstallAMissingPeer) {  // the device's arguments: device_cli_test.cpp
  Result r = kiln("bench " + model() + " --peer ort --ort-dir " + file("no_ort_here"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "scripts/install_ort.sh build/ort")) << r.out;
  EXPECT_FALSE(contains(r.out, "[bench tiny]")) << "must refuse before running anything: " << r.out;
  r = kiln("bench " + model() + " --peer tvm");
  EXPECT_EQ(r.code, 1) << r.out;
}

TEST_F(BenchCli, OnnxRuntimePeerRunsTheSameInputs) {
  fs::path ort = fs::path(KILN_SOURCE_DIR) / "build" / "ort";
  if (!fs::exists(ort / "node_modules" / "onnxruntime-node" / "package.json") || system("command -v node >/dev/null") != 0)
    GTEST_SKIP() << "SKIPPED: ONNX Runtime for Node.js is not installed (scripts/install_ort.sh build/ort)";
  Result r = kiln("bench " + model() + " --dim batch=3 --iters 3 --warmup 1 --threads 2 --peer ort --ort-dir " +
                  ort.string() + " --json " + file("ort.json") + " --html " + file("ort.html"));
  ASSERT_EQ(r.code, 0) << r.out;
  json doc = read_json(file("ort.json"));
  EXPECT_TRUE(contains(doc["peer"].get<std::string>(), "ONNX Runtime"));
  const json& rec = doc["records"][0];
  expect_sane_side(rec, "ort");
  EXPECT_EQ(rec["times_ms"]["ort"].size(), 3u);
  EXPECT_TRUE(rec["speedup_vs_ort"].is_number());
  EXPECT_EQ(rec["accuracy_vs_ort"]["result"], "pass") << rec.dump(2);
  EXPECT_EQ(rec["accuracy"], "pass");
  EXPECT_TRUE(contains(read_text(file("ort.html")), "compiled vs ONNX Runtime"));
}

TEST_F(BenchCli, PeerFailureOnOneModelIsRecordedAndTheBenchGoesOn) {
  if (system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "SKIPPED: node (Node.js) is not installed";
  // A stand-in for onnxruntime-node: its helper dies on a model named crash*, refuses every other one.
  fs::path fake = dir_ / "fake_ort" / "node_modules" / "onnxruntime-node";
  fs::create_directories(fake);
  std::ofstream(fake / "package.json") << R"({"name": "onnxruntime-node", "version": "0.0.0-fake", "main": "index.js"})";
  std::ofstream(fake / "index.js") << R"(
class Tensor { constructor(type, data, dims) { this.type = type; this.data = data; this.dims = dims; } }
const InferenceSession = { async create(path) {
  if (path.includes('crash')) process.exit(7);
  throw new Error('fake ORT refuses ' + path);
} };
module.exports = { Tensor, InferenceSession };
)";
  fs::copy_file(model(), file("crash.onnx"));
  Result r = kiln("bench " + file("crash.onnx") + " " + model() + " --dim batch=2 --iters 2 --warmup 0 --threads 1 " +
                  "--peer ort --ort-dir " + (dir_ / "fake_ort").string() + " --json " + file("peer.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  json doc = read_json(file("peer.json"));
  ASSERT_EQ(doc["records"].size(), 2u) << doc.dump(2);
  for (const json& rec : doc["records"]) {
    EXPECT_TRUE(rec["ort_ms"].is_null()) << rec.dump(2);
    EXPECT_EQ(rec["accuracy"], "pass") << rec.dump(2);
    expect_sane_side(rec, "compiled");
  }
  EXPECT_TRUE(contains(doc["records"][0]["ort_error"].get<std::string>(), "exited")) << doc["records"][0].dump(2);
  EXPECT_TRUE(contains(doc["records"][1]["ort_error"].get<std::string>(), "fake ORT refuses")) << doc["records"][1].dump(2);
  EXPECT_TRUE(contains(r.out, "measuring it without the peer")) << r.out;
}

TEST_F(BenchCli, ProfileTraceCoversEveryStepOfEveryRun) {
  const int iters = 3;
  Result r = kiln("profile " + model() + " --dim batch=3 --threads 2 --iters " + std::to_string(iters) + " --trace " +
                  file("trace.json") + " --json " + file("profile.json") + " --html " + file("profile.html"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "coverage")) << r.out;
  json prof = read_json(file("profile.json"));
  const int steps = prof["steps"];
  ASSERT_GT(steps, 0);
  json trace = read_json(file("trace.json"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  std::map<int, std::map<int, int>> seen;  // pid -> step -> events
  std::map<int, int> runs;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    if (e["cat"] == "run") {
      runs[e["pid"]]++;
      continue;
    }
    ASSERT_TRUE(e["args"].contains("source_nodes") && e["args"].contains("output")) << e.dump();
    EXPECT_FALSE(e["args"]["source_nodes"].empty()) << e.dump();
    EXPECT_EQ(e["args"]["kind"], e["cat"]);
    seen[e["pid"]][e["args"]["step"]]++;
  }
  EXPECT_EQ(runs[1], iters);  // the compiled mode (pid 1) and eager (pid 2)
  EXPECT_EQ(runs[2], iters);
  ASSERT_EQ(static_cast<int>(seen[1].size()), steps);
  for (auto& [step, count] : seen[1]) EXPECT_EQ(count, iters) << "step " << step;
  EXPECT_EQ(seen[2].size(), 8u);  // eager: one step per node

  const json& t = prof["op_table"];
  std::set<std::string> ops;
  double eager_sum = 0;
  for (const json& row : t["rows"]) {
    ops.insert(row["op"].get<std::string>());
    eager_sum += row["eager_ms"].get<double>();
  }
  EXPECT_EQ(ops, (std::set<std::string>{"Erf", "Mul", "MatMul", "Add", "Relu", "Softmax"}));
  EXPECT_NEAR(eager_sum, t["eager_table_ms"].get<double>(), 1e-9);
  EXPECT_GT(t["compiled_coverage"].get<double>(), 0.0);
  EXPECT_LE(t["compiled_coverage"].get<double>(), 1.0 + 1e-9);  // steps lie inside the run
  std::string html = read_text(file("profile.html"));
  EXPECT_TRUE(contains(html, "<svg") && contains(html, "MatMul"));
}

TEST_F(BenchCli, ProfileEagerModeOnTheBundledModel) {
  Result r = kiln("profile --mode eager --dim seq=8 --iters 2 --warmup 0 --threads 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "kernels (eager)")) << r.out;
  EXPECT_TRUE(contains(r.out, "MatMul")) << r.out;
  r = kiln("profile --mode fast");
  EXPECT_EQ(r.code, 1) << r.out;
}

}  // namespace
