// `kiln sweep softmax` end to end on a tiny width list (no timing asserted): the table, the --json
// records (fields, one chosen route per width), --store and the router naming the calibration after it.
#include <gtest/gtest.h>

#include "schedule/softmax_route.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace kiln::sweep_test {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class SweepCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-sweep-cli-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  // Runs kiln with `args` against the private cache; returns the exit code, stdout in `out`.
  int kiln(const std::string& args, std::string& out) {
    std::string cmd = "KILN_CACHE_DIR='" + (root / "cache").string() + "' KILN_COMPILE_JOBS=2 '" KILN_BINARY "' " +
                      args + " > '" + (root / "out.txt").string() + "' 2> '" + (root / "err.txt").string() + "'";
    int rc = std::system(cmd.c_str());
    out = read(root / "out.txt") + read(root / "err.txt");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  // Whether this kiln has the sweep command (tools/main.cpp registers it).
  bool has_sweep() {
    std::string out;
    return kiln("--help", out) == 0 && out.find("\n  sweep ") != std::string::npos;
  }
  fs::path root;
};

TEST_F(SweepCli, TinySweepWritesRecordsAndStoresThresholds) {
  std::string out;
  if (!has_sweep()) GTEST_SKIP() << "`kiln sweep` is not registered in tools/main.cpp yet";
  const std::string tiny = "sweep softmax --threads 1 --widths 64,300,64 --no-attention --elements 2048 --budget-ms 2";
  const fs::path json_file = root / "sweep.json";
  ASSERT_EQ(kiln(tiny + " --json '" + json_file.string() + "'", out), 0) << out;
  EXPECT_NE(out.find("routing now uses: defaults"), std::string::npos) << out;
  EXPECT_NE(out.find("copy bandwidth"), std::string::npos) << out;
  EXPECT_NE(out.find("not stored"), std::string::npos) << out;

  nlohmann::json j = nlohmann::json::parse(read(json_file));
  ASSERT_TRUE(j.contains("copy_gbps") && j["copy_gbps"].is_number()) << j.dump();
  EXPECT_GT(j["copy_gbps"].get<double>(), 0.0);
  ASSERT_TRUE(j["records"].is_array());
  std::map<int64_t, int> chosen, routes;
  for (const auto& r : j["records"]) {
    for (const char* field : {"width", "route", "gbps", "ns_per_row", "chosen"})
      ASSERT_TRUE(r.contains(field)) << field << " in " << r.dump();
    std::string route = r["route"].get<std::string>();
    EXPECT_TRUE(route == "fused" || route == "split" || route == "library") << route;
    EXPECT_GT(r["gbps"].get<double>(), 0.0);
    EXPECT_GT(r["ns_per_row"].get<double>(), 0.0);
    int64_t w = r["width"].get<int64_t>();
    routes[w]++;
    chosen[w] += r["chosen"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(routes, (std::map<int64_t, int>{{64, 3}, {300, 3}}));  // the duplicate width once
  EXPECT_EQ(chosen, (std::map<int64_t, int>{{64, 1}, {300, 1}}));  // exactly one chosen route per width
  EXPECT_TRUE(j["stored"].is_null());
  EXPECT_TRUE(j["attention"].empty());

  // The chosen route is the router's own choice under the derived thresholds.
  for (const auto& r : j["records"]) {
    if (!r["chosen"].get<bool>()) continue;
    schedule::RoutingThresholds t{j["thresholds"]["max_fused_width"].get<int64_t>(),
                                  j["thresholds"]["library_min_width"].is_null()
                                      ? schedule::kNeverWidth
                                      : j["thresholds"]["library_min_width"].get<int64_t>(),
                                  "sweep", j["thresholds"]["library_max_width"].get<int64_t>()};
    schedule::WidthRoute w = schedule::route_by_width(r["width"].get<int64_t>(), t);
    EXPECT_EQ(r["route"], w.library ? "library" : w.split_rows ? "split" : "fused") << r.dump();
  }

  ASSERT_EQ(kiln(tiny + " --store --html '" + (root / "sweep.html").string() + "'", out), 0) << out;
  const std::string html = read(root / "sweep.html");
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("chosen by kiln"), std::string::npos);
  EXPECT_NE(html.find("(chosen)"), std::string::npos);
  const fs::path db = root / "cache" / "tuning.sqlite";
  EXPECT_TRUE(fs::exists(db));
  EXPECT_NE(out.find("routing now uses: calibration " + db.string()), std::string::npos) << out;
  // The stored sweep is what `kiln bench --html` draws when given no --sweep file.
  ASSERT_EQ(kiln("bench --iters 1 --warmup 0 --threads 1 --html '" + (root / "bench.html").string() + "'", out), 0)
      << out;
  EXPECT_NE(read(root / "bench.html").find("the calibration stored for this device"), std::string::npos);
  EXPECT_NE(read(root / "bench.html").find("Softmax routes by row width"), std::string::npos);
  // The next run starts from the stored calibration; another thread count is another device.
  ASSERT_EQ(kiln(tiny, out), 0) << out;
  EXPECT_NE(out.find("routing now uses: calibration " + db.string()), std::string::npos) << out;
  ASSERT_EQ(kiln("sweep softmax --threads 2 --widths 64 --no-attention --elements 512 --budget-ms 1", out), 0) << out;
  EXPECT_NE(out.find("routing now uses: defaults"), std::string::npos) << out;

  // The attention rows: both routes' kernels, one of them chosen.
  ASSERT_EQ(kiln("sweep softmax --threads 1 --widths 64 --attention-seqs 8 --elements 512 --budget-ms 1 --json '" +
                     json_file.string() + "'",
                 out),
            0)
      << out;
  j = nlohmann::json::parse(read(json_file));
  ASSERT_EQ(j["attention"].size(), 2u) << j.dump();
  int attention_chosen = 0;
  for (const auto& r : j["attention"]) {
    EXPECT_GT(r["ms"].get<double>(), 0.0);
    attention_chosen += r["chosen"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(attention_chosen, 1);
}

// Each route is compiler::compile with settings that force it: the user's routing settings change
// nothing the sweep measures, and the compiles' plans (KILN_DEBUG=fusion) are of the sweep's graph.
TEST_F(SweepCli, RoutesAreForcedWhateverTheRoutingSettings) {
  std::string out;
  if (!has_sweep()) GTEST_SKIP() << "`kiln sweep` is not registered in tools/main.cpp yet";
  const fs::path json_file = root / "sweep.json";
  ASSERT_EQ(kiln("--set softmax_route=eager --set softmax_max_fuse_width=0 --set debug=fusion sweep softmax "
                 "--threads 1 --widths 64,300 --attention-seqs 8 --elements 2048 --budget-ms 1 --json '" +
                     json_file.string() + "'",
                 out),
            0)
      << out;
  nlohmann::json j = nlohmann::json::parse(read(json_file));
  std::map<std::string, int> routes;
  for (const auto& r : j["records"]) routes[r["route"].get<std::string>()]++;
  EXPECT_EQ(routes, (std::map<std::string, int>{{"fused", 2}, {"split", 2}, {"library", 2}})) << j.dump();
  EXPECT_EQ(j["attention"].size(), 2u) << j.dump();
  EXPECT_NE(out.find("(sm64)"), std::string::npos) << out;  // a plan step computing the width-64 softmax
  EXPECT_NE(out.find(" library "), std::string::npos) << out;
  EXPECT_NE(out.find(" generated "), std::string::npos) << out;
}

TEST_F(SweepCli, BadArgumentsAreUserErrors) {
  std::string out;
  if (!has_sweep()) GTEST_SKIP() << "`kiln sweep` is not registered in tools/main.cpp yet";
  EXPECT_EQ(kiln("sweep softmax --device gpu --widths 64", out), 1);
  EXPECT_NE(out.find("only cpu"), std::string::npos) << out;
  EXPECT_EQ(kiln("sweep softmax --dtype f16 --widths 64", out), 1);
  EXPECT_EQ(kiln("sweep softmax --widths 0", out), 1);
  // A corrupt database: the sweep says the defaults apply and why.
  std::filesystem::create_directories(root / "cache");
  std::ofstream(root / "cache" / "tuning.sqlite") << "{not a database";
  ASSERT_EQ(kiln("sweep softmax --threads 1 --widths 64 --no-attention --elements 512 --budget-ms 1", out), 0) << out;
  EXPECT_NE(out.find("routing now uses: defaults"), std::string::npos) << out;
  EXPECT_NE(out.find("corrupt"), std::string::npos) << out;
}


TEST(SweepGemmCli, RecordsEveryChoiceAndMarksOnePickPerShape) {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-sweep-gemm-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path root = pattern;
  auto kiln = [&](const std::string& args) {
    std::string cmd = "KILN_CACHE_DIR='" + (root / "cache").string() + "' KILN_COMPILE_JOBS=2 '" KILN_BINARY "' " +
                      args + " > '" + (root / "out.txt").string() + "' 2>&1";
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  const std::string json_file = (root / "gemm.json").string();
  ASSERT_EQ(kiln("sweep gemm --threads 2 --shapes 5x48x33,1x96x16 --json '" + json_file + "' --html '" +
                 (root / "gemm.html").string() + "'"),
            0)
      << read(root / "out.txt");
  nlohmann::json j = nlohmann::json::parse(read(json_file));
  std::map<std::string, int> chosen;
  std::set<std::string> families;
  for (const auto& r : j["records"]) {
    for (const char* field : {"m", "n", "k", "epilogue", "choice", "gflops", "chosen"})
      ASSERT_TRUE(r.contains(field)) << field << " in " << r.dump();
    EXPECT_GT(r["gflops"].get<double>(), 0.0) << r.dump();
    const std::string key = r["m"].dump() + "x" + r["n"].dump() + "x" + r["k"].dump() + " " + r["epilogue"].get<std::string>();
    chosen[key] += r["chosen"].get<bool>() ? 1 : 0;
    families.insert(r["choice"].get<std::string>().substr(0, r["choice"].get<std::string>().find(':')));
  }
  EXPECT_EQ(chosen, (std::map<std::string, int>{{"5x48x33 none", 1}, {"5x48x33 bias+gelu", 1}, {"1x96x16 none", 1},
                                                {"1x96x16 bias+gelu", 1}}));
  EXPECT_EQ(families, (std::set<std::string>{"template", "template+epilogue", "onednn", "onednn+epilogue", "blas",
                                             "blas+epilogue"}));
  EXPECT_NE(read(root / "gemm.html").find("GEMM N=48 K=33, epilogue bias+gelu"), std::string::npos);

  // Only the enabled families compete; autotune=off measures nothing; shapes are checked.
  ASSERT_EQ(kiln("--set gemm_backends=onednn sweep gemm --threads 1 --shapes 4x16x16 --bare-only --json '" + json_file + "'"), 0)
      << read(root / "out.txt");
  j = nlohmann::json::parse(read(json_file));
  ASSERT_EQ(j["records"].size(), 1u) << j.dump();
  EXPECT_EQ(j["records"][0]["choice"], "onednn");
  ASSERT_EQ(kiln("--set gemm_backends=blas sweep gemm --threads 1 --shapes 4x16x16 --epilogue-only --json '" + json_file + "'"),
            0)
      << read(root / "out.txt");
  j = nlohmann::json::parse(read(json_file));
  ASSERT_EQ(j["records"].size(), 1u) << j.dump();
  EXPECT_EQ(j["records"][0]["choice"], "blas+epilogue");
  EXPECT_EQ(kiln("--set autotune=off sweep gemm --shapes 4x16x16"), 1);
  EXPECT_NE(read(root / "out.txt").find("autotune=off"), std::string::npos);
  EXPECT_EQ(kiln("sweep gemm --shapes 4x16"), 1);
  EXPECT_NE(read(root / "out.txt").find("is not MxNxK"), std::string::npos);
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

}  // namespace
}  // namespace kiln::sweep_test
