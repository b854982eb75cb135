// The hostile-model corpus (tests/data/malformed, made by scripts/make_malformed_corpus.py): every bad
// file must be a UserError, never a crash or another exception; valid_* controls must import.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

const fs::path kCorpus = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "malformed";

// file -> expectation, from the README table rows "| file | expected | what |".
std::map<std::string, std::string> read_expectations() {
  std::map<std::string, std::string> out;
  std::ifstream f(kCorpus / "README.md");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() >= 2 && cells[0].ends_with(".onnx")) out[cells[0]] = cells[1];
  }
  return out;
}

enum class Outcome { imported, user_error, other_error };

Outcome try_import(const std::string& path, std::string& message) {
  try {
    import_onnx(path, Options{});
    return Outcome::imported;
  } catch (const UserError& e) {
    message = e.what();
    return Outcome::user_error;
  } catch (const std::exception& e) {
    message = e.what();
    return Outcome::other_error;
  }
}

TEST(OnnxMalformedCorpus, EveryFileHasTheExpectedOutcome) {
  auto expectations = read_expectations();
  int files = 0, rejected = 0, controls = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    if (entry.path().extension() != ".onnx") continue;
    std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++files;
    auto it = expectations.find(name);
    ASSERT_NE(it, expectations.end()) << "no README.md line for " << name;
    std::string message;
    Outcome got = try_import(entry.path().string(), message);
    EXPECT_NE(got, Outcome::other_error) << "not a UserError: " << message;
    if (it->second == "valid") {
      EXPECT_EQ(got, Outcome::imported) << message;
      ++controls;
    } else if (it->second == "import error") {
      EXPECT_EQ(got, Outcome::user_error) << "imported, but should be rejected";
      EXPECT_FALSE(message.empty());
      ++rejected;
    } else {
      EXPECT_EQ(it->second, "rejected at shape inference") << "unknown expectation";
    }
  }
  EXPECT_GE(files, 40);
  EXPECT_GE(rejected, 40);
  EXPECT_GE(controls, 5);
  EXPECT_EQ(static_cast<size_t>(files), expectations.size()) << "README.md lists files that are not there";
}

TEST(OnnxMalformedCorpus, MessagesNameTheProblem) {
  struct Case {
    const char* file;
    const char* needle;
  };
  for (const Case& c : std::vector<Case>{
           {"graph_cycle.onnx", "cycle"},
           {"graph_dangling_input.onnx", "input 'ghost'"},
           {"op_unknown.onnx", "'FooBar'"},
           {"op_unknown_domain.onnx", "com.microsoft::FusedMatMul"},
           {"op_if_branch_outputs.onnx", "then_branch has 2 outputs, but the node has 1"},
           {"op_if_unknown_name.onnx", "a branch reads 'nope'"},
           {"op_if_nested_too_deep.onnx", "subgraphs nest deeper than 16 levels"},
           {"op_loop_body_outputs.onnx", "body has 3 outputs, but the node has 1"},
           {"op_loop_subgraph.onnx", "has no outputs (Loop makes at least one)"},
           {"version_opset5.onnx", "opset 5"},
           {"version_opset99.onnx", "opset 99"},
           {"tensor_string.onnx", "initializer 'w': string tensors"},
           {"tensor_raw_length_mismatch.onnx", "raw_data has 20 bytes"},
           {"tensor_dims_overflow.onnx", "overflows"},
           {"extdata_absolute.onnx", "absolute"},
           {"extdata_dotdot.onnx", "'..'"},
           {"protobuf_truncated.onnx", "does not parse"},
       }) {
    SCOPED_TRACE(c.file);
    std::string message;
    EXPECT_EQ(try_import((kCorpus / c.file).string(), message), Outcome::user_error);
    EXPECT_NE(message.find(c.needle), std::string::npos) << message;
  }
}

// Seeded random corruptions of the controls (byte flips, truncations, insertions): each import either
// succeeds or is a UserError; anything else (another exception, a crash) fails the test.
TEST(OnnxMalformedCorpus, MutatedControlsNeverCrash) {
  TempDir dir;
  fs::copy_file(kCorpus / "extdata_weights.bin", dir.path() / "extdata_weights.bin");
  std::mt19937 rng(7);
  int imported = 0, rejected = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("valid_")) continue;
    std::ifstream f(entry.path(), std::ios::binary);
    std::string original((std::istreambuf_iterator<char>(f)), {});
    for (int round = 0; round < 300; ++round) {
      std::string bytes = original;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !bytes.empty(); ++e) {
        size_t at = rng() % bytes.size();
        switch (rng() % 4) {
          case 0: bytes[at] = static_cast<char>(rng()); break;
          case 1: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
          case 2: bytes.resize(at); break;
          default: bytes.insert(at, 1, static_cast<char>(rng())); break;
        }
      }
      std::string message;
      Outcome got = Outcome::imported;
      try {
        import_onnx_bytes(bytes, dir.path(), Options{});
      } catch (const UserError& e) {
        got = Outcome::user_error;
      } catch (const std::exception& e) {
        got = Outcome::other_error;
        message = e.what();
      }
      ASSERT_NE(got, Outcome::other_error) << name << " round " << round << ": " << message;
      (got == Outcome::imported ? imported : rejected)++;
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(imported, 0);  // some corruptions hit names or values and stay valid
}

// Git stores links poorly, so the escaping symlink is made here.
TEST(OnnxMalformedCorpus, SymlinkLeavingTheFolder) {
  TempDir dir;
  fs::create_directory(dir.path() / "model");
  fs::copy_file(kCorpus / "extdata_symlink.onnx", dir.path() / "model" / "m.onnx");
  fs::copy_file(kCorpus / "extdata_weights.bin", dir.path() / "secret.bin");
  std::string message;
  for (const fs::path& target : {fs::path("../secret.bin"), dir.path() / "secret.bin"}) {
    SCOPED_TRACE(target.string());
    fs::remove(dir.path() / "model" / "extdata_link.bin");
    fs::create_symlink(target, dir.path() / "model" / "extdata_link.bin");
    EXPECT_EQ(try_import(dir.file("model/m.onnx"), message), Outcome::user_error);
    EXPECT_NE(message.find("outside the model's folder"), std::string::npos) << message;
  }
  // The same link pointing inside the folder is fine.
  fs::copy_file(kCorpus / "extdata_weights.bin", dir.path() / "model" / "inside.bin");
  fs::remove(dir.path() / "model" / "extdata_link.bin");
  fs::create_symlink("inside.bin", dir.path() / "model" / "extdata_link.bin");
  EXPECT_EQ(try_import(dir.file("model/m.onnx"), message), Outcome::imported) << message;
}

}  // namespace
}  // namespace kiln::testing
