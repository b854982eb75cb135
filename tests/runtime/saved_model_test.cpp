// Saved models (runtime/saved_model.h): a compile written to one file loads without compiling or
// benchmarking and computes the same bytes; damaged, edited, stale and foreign files are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#define XXH_INLINE_ALL  // header-only, as in codegen/cpu/content_hash.cpp
#include <xxhash.h>

#include "codegen/cpu/toolchain.h"
#include "common/temp_dir.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"
#include "runtime/saved_model.h"
#include "support/packed_weights.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint64_t get_u64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(s[at + size_t(i)])) << (8 * i);
  return v;
}
std::string u64_bytes(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}
size_t align64(size_t v) { return (v + 63) / 64 * 64; }

// The file with its header changed by `edit` and a correct checksum: what a careless edit (or a file
// from elsewhere) looks like, so that the checks behind the checksum are reached.
std::string with_header(const std::string& file, const std::function<void(json&)>& edit) {
  const uint64_t h = get_u64(file, 8);
  json header = json::parse(file.substr(16, h));
  const std::string area = file.substr(align64(16 + h), file.size() - 16 - align64(16 + h));
  edit(header);
  std::string text = header.dump();
  std::string out = "KILNSAVE" + u64_bytes(text.size()) + text;
  out.resize(align64(out.size()), '\0');
  out += area;
  XXH128_hash_t sum = XXH3_128bits(out.data(), out.size());
  return out + u64_bytes(sum.high64) + u64_bytes(sum.low64);
}

const std::map<std::string, int64_t> kDims = {{"batch", 1}, {"seq", 12}};

// One compile for the whole suite: the demo transformer (GEMMs the autotuner picks, fused rows and
// pointwise kernels) into a private cache, saved.
class SavedModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test_common::TempDir("kiln-saved-model-test");
    Options o;
    o.cache_dir = (dir_->root() / "cache").string();
    file_ = dir_->root() / "demo.kiln";
    const uint64_t before = codegen::cpu::compiler_run_count();
    compiled_ = new Session(Session::compile_to_file(demo_transformer(), Mode::compiled, o, kDims, file_.string()));
    compiles_to_save_ = codegen::cpu::compiler_run_count() - before;
  }
  static void TearDownTestSuite() {
    delete compiled_;
    delete dir_;
  }
  static fs::path scratch(const std::string& name) { return dir_->root() / name; }
  // Load options as a fresh process would have them: another, empty cache folder.
  static Options fresh_options() {
    Options o;
    o.cache_dir = (dir_->root() / "empty-cache").string();
    return o;
  }
  static std::string load_error(const fs::path& file, const Options& o, Mode mode = Mode::compiled,
                                const std::map<std::string, int64_t>& dims = {}) {
    try {
      Session::load_file(file.string(), mode, o, dims);
    } catch (const UserError& e) {
      return e.what();
    }
    return "(loaded)";
  }

  static test_common::TempDir* dir_;
  static fs::path file_;
  static Session* compiled_;
  static uint64_t compiles_to_save_;
};
test_common::TempDir* SavedModelTest::dir_ = nullptr;
fs::path SavedModelTest::file_;
Session* SavedModelTest::compiled_ = nullptr;
uint64_t SavedModelTest::compiles_to_save_ = 0;

TEST_F(SavedModelTest, LoadsWithoutCompilingOrBenchmarkingAndComputesTheSameBytes) {
  ASSERT_TRUE(runtime::is_saved_model(file_.string()));
  ASSERT_GT(compiles_to_save_, 0u) << "the save compiled nothing (an empty cache was expected): this proves nothing";
  const uint64_t compiles = codegen::cpu::compiler_run_count();
  const PackCounts packs = pack_counts();
  Session loaded = Session::load_file(file_.string(), Mode::compiled, fresh_options());
  EXPECT_EQ(codegen::cpu::compiler_run_count(), compiles) << "loading a saved model ran the compiler";
  // Every weight the kernels pack comes packed in the file: adopted, none packed again.
  EXPECT_EQ(pack_counts().made, packs.made) << "the load packed weights";
  EXPECT_GT(pack_counts().adopted, packs.adopted);
  EXPECT_EQ(loaded.stats().autotune_benchmarks, 0);
  EXPECT_EQ(loaded.stats().kernels, compiled_->stats().kernels);
  EXPECT_GT(loaded.stats().fused_kernels, 0);
  EXPECT_FALSE(fs::exists(dir_->root() / "empty-cache" / "tuning.sqlite")) << "the caller's cache was written";

  std::map<std::string, Tensor> in = make_inputs(compiled_->graph(), {}, 7);
  std::map<std::string, Tensor> want = compiled_->run(in), got = loaded.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    ASSERT_EQ(got.at(name).nbytes(), t.nbytes()) << name;
    EXPECT_EQ(std::memcmp(got.at(name).raw(), t.raw(), t.nbytes()), 0) << name << " differs";
  }
}

// A pack that names no constant is refused; one in a layout no kernel asks for is left alone (the
// kernel packs the original itself) and the results do not change.
TEST_F(SavedModelTest, PacksAreCheckedAndOnlyAdoptedInTheirOwnLayout) {
  const std::string file = read_bytes(file_);
  const json header = json::parse(file.substr(16, get_u64(file, 8)));
  ASSERT_TRUE(header.contains("packs") && !header["packs"].empty()) << "the demo model saved no packed weights";
  write_bytes(scratch("pack-index.kiln"), with_header(file, [](json& h) { h["packs"][0]["data"] = h["data"].size(); }));
  EXPECT_NE(load_error(scratch("pack-index.kiln"), fresh_options()).find("names no constant or layout"),
            std::string::npos);
  write_bytes(scratch("pack-layout.kiln"), with_header(file, [](json& h) { h["packs"][0].erase("layout"); }));
  EXPECT_NE(load_error(scratch("pack-layout.kiln"), fresh_options()).find("names no constant or layout"),
            std::string::npos);

  write_bytes(scratch("pack-foreign.kiln"),
              with_header(file, [](json& h) { for (json& p : h["packs"]) p["layout"] = "template 0"; }));
  const PackCounts packs = pack_counts();
  Session loaded = Session::load_file(scratch("pack-foreign.kiln").string(), Mode::compiled, fresh_options());
  EXPECT_EQ(pack_counts().adopted, packs.adopted);
  EXPECT_GT(pack_counts().made, packs.made);
  std::map<std::string, Tensor> in = make_inputs(compiled_->graph(), {}, 8);
  std::map<std::string, Tensor> want = compiled_->run(in), got = loaded.run(in);
  for (const auto& [name, t] : want)
    EXPECT_EQ(std::memcmp(got.at(name).raw(), t.raw(), t.nbytes()), 0) << name << " differs";
}

TEST_F(SavedModelTest, AnOnnxFileIsNotTakenForOne) {
  EXPECT_FALSE(runtime::is_saved_model(KILN_SOURCE_DIR "/tests/data/zoo/resnet18.onnx"));
}

TEST_F(SavedModelTest, DamagedOrTruncatedFilesAreRefused) {
  const std::string file = read_bytes(file_);
  std::string flipped = file;
  flipped[file.size() / 2] ^= 0x40;  // inside a section: a constant or a kernel
  write_bytes(scratch("flipped.kiln"), flipped);
  EXPECT_NE(load_error(scratch("flipped.kiln"), fresh_options()).find("damaged"), std::string::npos);

  write_bytes(scratch("truncated.kiln"), file.substr(0, file.size() - 100));
  EXPECT_NE(load_error(scratch("truncated.kiln"), fresh_options()).find("damaged"), std::string::npos);
  write_bytes(scratch("tiny.kiln"), file.substr(0, 20));
  EXPECT_NE(load_error(scratch("tiny.kiln"), fresh_options()).find("too short"), std::string::npos);
}

TEST_F(SavedModelTest, AKernelEditedWithoutTheChecksumIsNeverLoaded) {
  const std::string file = read_bytes(file_);
  const uint64_t h = get_u64(file, 8);
  json header = json::parse(file.substr(16, h));
  ASSERT_FALSE(header["kernels"].empty());
  const size_t at = align64(16 + h) + header["kernels"][0]["offset"].get<size_t>() + 64;
  std::string edited = file;
  edited[at] ^= 1;
  write_bytes(scratch("edited.kiln"), edited);
  EXPECT_NE(load_error(scratch("edited.kiln"), fresh_options()).find("damaged"), std::string::npos);
}

TEST_F(SavedModelTest, ForeignStaleAndGarbledFilesAreRefused) {
  const std::string file = read_bytes(file_);
  auto refused = [&](const std::string& name, const std::function<void(json&)>& edit) {
    write_bytes(scratch(name), with_header(file, edit));
    return load_error(scratch(name), fresh_options());
  };
  EXPECT_NE(refused("machine.kiln", [](json& h) { h["device_key"] = "Some Other CPU | avx2 | 64 threads"; })
                .find("made for another machine"),
            std::string::npos);
  EXPECT_NE(refused("stale.kiln", [](json& h) { h["kiln_version"] = "0.0.1"; }).find("saved by kiln 0.0.1"),
            std::string::npos);
  EXPECT_NE(refused("format.kiln", [](json& h) { h["format"] = 99; }).find("format 99"), std::string::npos);
  EXPECT_NE(refused("outside.kiln", [](json& h) { h["data"][0]["size"] = uint64_t{1} << 40; }).find("outside"),
            std::string::npos);
  EXPECT_NE(refused("key.kiln", [](json& h) { h["kernels"][0]["key"] = "../../../etc/passwd"; }).find("valid key"),
            std::string::npos);
  EXPECT_NE(refused("size.kiln",
                    [](json& h) {
                      h["data"][0]["size"] = h["data"][0]["size"].get<uint64_t>() - 4;
                    })
                .find("data section 0"),
            std::string::npos);
  EXPECT_NE(refused("setting.kiln", [](json& h) { h["settings"]["autotune"] = "maybe"; }).find("autotune"),
            std::string::npos);
  // The graph is the IR text: an edit that breaks it is the parser's error, with its line.
  EXPECT_NE(refused("graph.kiln", [](json& h) { h["graph"]["size"] = 40; }).find("IR text"), std::string::npos);
}

TEST_F(SavedModelTest, ItRunsWithItsOwnSettingsModeAndSizes) {
  Options autotune_max = fresh_options();
  autotune_max.autotune = "max";
  EXPECT_NE(load_error(file_, autotune_max).find("compiled with autotune=fast"), std::string::npos);
  EXPECT_NE(load_error(file_, fresh_options(), Mode::eager).find("compiled in compiled mode"), std::string::npos);
  EXPECT_NE(load_error(file_, fresh_options(), Mode::compiled, {{"seq", 13}}).find("seq=12"), std::string::npos);

  Options talkative = fresh_options();  // what a run prints is the caller's business
  talkative.debug = "route";
  talkative.compile_jobs = 1;
  EXPECT_EQ(load_error(file_, talkative, Mode::compiled, {{"seq", 12}}), "(loaded)");
}

TEST_F(SavedModelTest, OnlyCpuModelsAreSaved) {
  Options cuda;
  cuda.device = "cuda";
  try {
    Session::compile_to_file(demo_transformer(), Mode::compiled, cuda, kDims, scratch("cuda.kiln").string());
    FAIL() << "a CUDA model was saved";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("CPU kernels only"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(scratch("cuda.kiln")));
}

}  // namespace
}  // namespace kiln
