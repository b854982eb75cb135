// Measured device choices in the tuning store (backend/cuda/cuda_choice_store.h), without a GPU: a choice
// stored by one process is found by the next on the same GPU, driver, libraries and build, and by no
// other; a file that is not a store gives no choice (and is left alone).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "backend/cuda/cuda_choice_store.h"

namespace kiln::backend::cuda {
namespace {

namespace fs = std::filesystem;

class ChoiceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln-choice-store-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
    h200_.name = "NVIDIA H200", h200_.compute_major = 9, h200_.sm_count = 132;
  }
  void TearDown() override { fs::remove_all(dir_); }
  ChoiceStore open(const DeviceInfo& d, int driver = 13000, const std::string& libs = "cublaslt 130100") {
    return ChoiceStore(dir_ / "tuning.sqlite", d, driver, libs, [this](const std::string& w) { warnings_.push_back(w); });
  }
  fs::path dir_;
  DeviceInfo h200_;
  std::vector<std::string> warnings_;
};

TEST_F(ChoiceStoreTest, AChoiceIsFoundByTheNextProcessOnTheSameGpuOnly) {
  open(h200_).store("cublaslt bf16 128x768x3072", 3);
  open(h200_).store("gemm template bf16 128x768x768", -1);
  EXPECT_EQ(open(h200_).lookup("cublaslt bf16 128x768x3072"), 3);
  EXPECT_EQ(open(h200_).lookup("gemm template bf16 128x768x768"), -1);
  EXPECT_EQ(open(h200_).lookup("cublaslt bf16 256x768x3072"), std::nullopt) << "another key";
  DeviceInfo h100 = h200_;
  h100.name = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(open(h100).lookup("cublaslt bf16 128x768x3072"), std::nullopt) << "another GPU";
  DeviceInfo fewer = h200_;
  fewer.sm_count = 114;
  EXPECT_EQ(open(fewer).lookup("cublaslt bf16 128x768x3072"), std::nullopt) << "another SM count";
  EXPECT_EQ(open(h200_, 12080).lookup("cublaslt bf16 128x768x3072"), std::nullopt) << "another driver";
  EXPECT_EQ(open(h200_, 13000, "cublaslt 130000").lookup("cublaslt bf16 128x768x3072"), std::nullopt)
      << "another cuBLASLt";
  ChoiceStore again = open(h200_);
  again.store("cublaslt bf16 128x768x3072", 5);  // measured again: replaced
  EXPECT_EQ(open(h200_).lookup("cublaslt bf16 128x768x3072"), 5);
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(ChoiceStoreTest, AFileThatIsNotAStoreGivesNoChoiceAndOneWarning) {
  std::ofstream(dir_ / "tuning.sqlite") << "not a database";
  ChoiceStore s = open(h200_);
  EXPECT_EQ(s.lookup("k"), std::nullopt);
  s.store("k", 1);
  EXPECT_EQ(s.lookup("k"), std::nullopt);
  EXPECT_EQ(warnings_.size(), 1u);
  std::ifstream in(dir_ / "tuning.sqlite");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not a database") << "never replaced";
}

}  // namespace
}  // namespace kiln::backend::cuda
