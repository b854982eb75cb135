// The softmax calibration in the one tuning store (autotune/softmax_calibration.h over tuning.sqlite)
// and the CPU backend's loader of it: thresholds round-trip, a corrupt or foreign file is ignored
// (defaults, never a crash) and never replaced (a store says why), concurrent writers lose nothing,
// files are private.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_device.h"
#include "autotune/device_key.h"
#include "autotune/softmax_calibration.h"
#include "autotune/tuning_store.h"
#include "kiln/errors.h"
#include "kiln/options.h"
#include "schedule/softmax_route.h"

namespace kiln::sweep_test {
namespace {

namespace fs = std::filesystem;
using autotune::load_softmax_calibration;
using autotune::SoftmaxCalibration;
using autotune::store_softmax_calibration;

// A fresh temp folder per test, removed afterwards.
class TuningDb : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-sweep-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root = pattern;
    db = root / "cache" / autotune::kTuningStoreFileName;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write_file(const std::string& text) {
    fs::create_directories(db.parent_path());
    std::ofstream(db) << text;
  }
  Options options() const {
    Options o;
    o.cache_dir = (root / "cache").string();
    return o;
  }
  fs::path root, db;
};

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

TEST_F(TuningDb, RoundTripsThresholdsPerDevice) {
  EXPECT_FALSE(load_softmax_calibration(db, "dev a"));
  store_softmax_calibration(db, "dev a", {4095, 8192}, {{"copy_gbps", 12.5}});
  store_softmax_calibration(db, "dev b", {32767, kNever});
  auto a = load_softmax_calibration(db, "dev a");
  auto b = load_softmax_calibration(db, "dev b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->max_fused_width, 4095);
  EXPECT_EQ(a->library_min_width, 8192);
  EXPECT_EQ(b->max_fused_width, 32767);
  EXPECT_EQ(b->library_min_width, kNever);  // "never" is stored as null and read back
  std::string why;
  EXPECT_FALSE(load_softmax_calibration(db, "dev c", &why));
  EXPECT_NE(why.find("no calibration for this device"), std::string::npos) << why;
  // Replacing one device keeps the other.
  store_softmax_calibration(db, "dev a", {100, 200});
  EXPECT_EQ(load_softmax_calibration(db, "dev a")->library_min_width, 200);
  EXPECT_EQ(load_softmax_calibration(db, "dev b")->max_fused_width, 32767);
}

TEST_F(TuningDb, FilesArePrivate) {
  store_softmax_calibration(db, "dev", {1, 2});
  struct stat st;
  ASSERT_EQ(::stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(db.parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(TuningDb, CorruptOrForeignFilesAreIgnoredAndNeverReplaced) {
  const std::vector<std::string> bad = {
      std::string("SQLite format 3\0", 16) + "truncated",
      "\x7f" "ELF\x02\x01\x01 garbage",
      "{\"format\": \"kiln-tuning\", \"version\": 1, \"devices\": {}}",  // the old JSON file's name was another
  };
  for (const std::string& text : bad) {
    write_file(text);
    std::string why;
    EXPECT_FALSE(load_softmax_calibration(db, "dev", &why)) << text;
    EXPECT_FALSE(why.empty()) << text;
    // The router keeps its defaults and says why.
    std::string router_why;
    schedule::RoutingThresholds t = backend::cpu::routing_thresholds(options(), &router_why);
    EXPECT_EQ(t.source, "defaults") << text;
    EXPECT_NE(router_why.find(db.string()), std::string::npos) << router_why;
    // A store does not replace a file that is not ours: it may be another program's.
    EXPECT_THROW(store_softmax_calibration(db, "dev", {10, 20}), UserError) << text;
    std::ifstream in(db, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);
  }
  // Another program's SQLite database.
  fs::remove(db);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE photos(id INTEGER);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_FALSE(load_softmax_calibration(db, "dev"));
  EXPECT_THROW(store_softmax_calibration(db, "dev", {1, 2}), UserError);
  // Not a regular file at all.
  fs::remove(db);
  fs::create_directories(db);
  EXPECT_FALSE(load_softmax_calibration(db, "dev"));
  EXPECT_EQ(backend::cpu::routing_thresholds(options()).source, "defaults");
  EXPECT_THROW(store_softmax_calibration(db, "dev", {1, 2}), UserError);
}

TEST_F(TuningDb, AMalformedRecordReadsAsNone) {
  autotune::TuningKey key;
  key.op_signature = "softmax_routing";
  key.shape_key = "thresholds by row width";
  key.dtype = "f32";
  key.device_key = "d";
  for (const char* record : {"[1, 2]", "{\"max_fused_width\": \"wide\", \"library_min_width\": 5, \"library_max_width\": 0}",
                             "{\"max_fused_width\": 500, \"library_min_width\": null, \"library_max_width\": -2}",
                             "{\"max_fused_width\": 1.5e300, \"library_min_width\": null, \"library_max_width\": 0}",
                             "not json"}) {
    autotune::TuningStore store(db);
    ASSERT_TRUE(store.store(key, {"thresholds", record, 1, 0}, true));
    std::string why;
    EXPECT_FALSE(load_softmax_calibration(db, "d", &why)) << record;
    EXPECT_NE(why.find("malformed"), std::string::npos) << why;
  }
  // The GEMM picks and the calibrations share the file: a calibration stored now reads back.
  store_softmax_calibration(db, "d", {500, kNever, 0});
  auto c = load_softmax_calibration(db, "d");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->library_min_width, kNever);
}

TEST_F(TuningDb, RouterReadsThisDevicesCalibration) {
  Options o = options();
  std::string why;
  EXPECT_EQ(backend::cpu::routing_thresholds(o, &why).source, "defaults");
  EXPECT_NE(why.find("no tuning store"), std::string::npos) << why;
  EXPECT_EQ(backend::cpu::tuning_db_path(o), db.string());
  const std::string key = backend::cpu::device_key(o);
  EXPECT_NE(key.find(autotune::cpu_model_name()), std::string::npos) << key;
  EXPECT_NE(key.find("threads"), std::string::npos) << key;
  // Another thread count is another device.
  Options three = o;
  three.threads = 3;
  EXPECT_NE(backend::cpu::device_key(three), backend::cpu::device_key([&] {
              Options four = o;
              four.threads = 4;
              return four;
            }()));

  store_softmax_calibration(db, key, {1023, 1024});
  schedule::RoutingThresholds t = backend::cpu::routing_thresholds(o, &why);
  EXPECT_EQ(t.source, "calibration " + db.string());
  EXPECT_TRUE(why.empty()) << why;
  EXPECT_EQ(t.max_fused_width, 1023);
  EXPECT_EQ(t.library_min_width, 1024);
  // The router applies them and names the source in its reason.
  schedule::SoftmaxSite site;
  site.node = 0;
  site.fusable = site.library_ok = true;
  schedule::RoutingPolicy p = schedule::routing_policy(o, t);
  site.width = 1023;
  EXPECT_EQ(schedule::decide_route(site, p).route, schedule::SoftmaxRoute::fused);
  site.width = 4096;
  schedule::RouteDecision d = schedule::decide_route(site, p);
  EXPECT_EQ(d.route, schedule::SoftmaxRoute::library);
  EXPECT_NE(d.reason.find("calibration " + db.string()), std::string::npos) << d.reason;
  // Another thread count finds no calibration.
  EXPECT_EQ(backend::cpu::routing_thresholds(three).source, "defaults");

  // A short-row library width round-trips; files without one (older) read as none.
  store_softmax_calibration(db, key, {1023, 4096, 64});
  t = backend::cpu::routing_thresholds(o);
  EXPECT_EQ(t.library_max_width, 64);
  p = schedule::routing_policy(o, t);
  site.width = 64;
  EXPECT_EQ(schedule::decide_route(site, p).route, schedule::SoftmaxRoute::library);
  site.width = 65;
  EXPECT_EQ(schedule::decide_route(site, p).route, schedule::SoftmaxRoute::fused);
  site.width = 2048;  // between: fused, with rows split across threads
  EXPECT_EQ(schedule::decide_route(site, p).route, schedule::SoftmaxRoute::fused);
  EXPECT_TRUE(schedule::route_by_width(2048, t).split_rows);
}

TEST_F(TuningDb, ConcurrentWritersLoseNothing) {
  constexpr int kWriters = 8, kWrites = 12;
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i)
        store_softmax_calibration(db, "dev " + std::to_string(w), {int64_t(w) * 1000 + i, int64_t(w) * 1000 + i + 1});
    });
  // A reader meanwhile sees either no entry or a complete one, never a broken file.
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i)
      if (auto c = load_softmax_calibration(db, "dev 0")) {
        EXPECT_EQ(c->library_min_width, c->max_fused_width + 1);
      }
  });
  for (auto& t : threads) t.join();
  reader.join();
  for (int w = 0; w < kWriters; ++w) {
    auto c = load_softmax_calibration(db, "dev " + std::to_string(w));
    ASSERT_TRUE(c) << w;
    EXPECT_EQ(c->max_fused_width, int64_t(w) * 1000 + kWrites - 1);
  }
}

}  // namespace
}  // namespace kiln::sweep_test
