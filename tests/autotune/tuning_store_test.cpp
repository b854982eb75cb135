// The SQLite tuning store: round trip, file modes, concurrent writers (threads and processes), and
// files that are not ours.
#include <sqlite3.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <thread>

#include "autotune/tuning_store.h"
#include "autotune_test_util.h"
#include "common/processes.h"

namespace kiln::autotune::testing {
namespace {

TuningKey sample_key(const std::string& shape = "M=1,K=2,N=3") {
  TuningKey k;
  k.op_signature = "MatMul(A[M,K],B[K,N])";
  k.shape_key = shape;
  k.dtype = "f32";
  k.device_key = "cpu | avx512 | 2 threads";
  k.library_versions = "onednn 2.6.3";
  k.settings_key = "gemm_backends=template,onednn";
  return k;
}

TuningRecord sample_record(const std::string& winner, int quality = 1) {
  TuningRecord r;
  r.winner = winner;
  r.timings_json = R"([{"name":")" + winner + R"(","median_us":1.5}])";
  r.quality = quality;
  return r;
}

// Runs raw SQL on a database file (to make foreign and newer files).
void raw_sql(const fs::path& file, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

void write_file(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << bytes;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TuningStore, RoundTripAndEveryKeyFieldCounts) {
  TempDir dir;
  Warnings w;
  TuningStore store(dir.db(), w.sink());
  EXPECT_FALSE(store.lookup(sample_key()).has_value());
  EXPECT_FALSE(fs::exists(dir.db())) << "a lookup must not create the file";
  ASSERT_TRUE(store.store(sample_key(), sample_record("onednn")));

  TuningStore again(dir.db(), w.sink());  // another connection, as another process would have
  auto hit = again.lookup(sample_key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->winner, "onednn");
  EXPECT_EQ(hit->timings_json, sample_record("onednn").timings_json);
  EXPECT_EQ(hit->quality, 1);
  EXPECT_GT(hit->created_unix, 0);

  std::vector<TuningKey> others(7, sample_key());
  others[0].op_signature += "+gelu";
  others[1].shape_key = "M=1,K=2,N=4";
  others[2].dtype = "bf16";
  others[3].device_key = "cpu | avx2 | 2 threads";
  others[4].library_versions = "onednn 3.0";
  others[5].settings_key = "gemm_backends=template";
  others[6].kiln_version = "0.0.1-other";
  for (const TuningKey& k : others) EXPECT_FALSE(again.lookup(k).has_value()) << k.op_signature << " " << k.shape_key;
  EXPECT_TRUE(w.lines.empty());
}

TEST(TuningStore, PrivateModes) {
  TempDir dir;
  const fs::path file = dir.root() / "a" / "b" / kTuningStoreFileName;
  TuningStore store(file);
  ASSERT_TRUE(store.store(sample_key(), sample_record("x")));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(file.parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(file.parent_path().parent_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(TuningStore, ThoroughResultIsNotReplacedByAQuickOne) {
  TempDir dir;
  TuningStore store(dir.db());
  ASSERT_TRUE(store.store(sample_key(), sample_record("slow_but_measured", 2)));
  ASSERT_TRUE(store.store(sample_key(), sample_record("quick_guess", 1)));
  EXPECT_EQ(store.lookup(sample_key(), 2)->winner, "slow_but_measured");
  ASSERT_TRUE(store.store(sample_key(), sample_record("remeasured", 2)));
  EXPECT_EQ(store.lookup(sample_key(), 1)->winner, "remeasured");
  TuningKey fast_only = sample_key("M=9");
  ASSERT_TRUE(store.store(fast_only, sample_record("fast", 1)));
  EXPECT_FALSE(store.lookup(fast_only, 2).has_value());
}

TEST(TuningStore, GarbageFileIsSurvivedAndLeftAlone) {
  TempDir dir;
  const std::string garbage = "this is not a database\n" + std::string(5000, '\x7f');
  write_file(dir.db(), garbage);
  ::chmod(dir.db().c_str(), 0600);
  Warnings w;
  TuningStore store(dir.db(), w.sink());
  EXPECT_FALSE(store.lookup(sample_key()).has_value());
  EXPECT_FALSE(store.lookup(sample_key()).has_value());
  EXPECT_FALSE(store.store(sample_key(), sample_record("x")));
  EXPECT_FALSE(store.mark_attempt(sample_key(), "x"));
  EXPECT_TRUE(store.attempts(sample_key()).empty());
  ASSERT_EQ(w.lines.size(), 1u) << "warned once";
  EXPECT_NE(w.lines[0].find("not a SQLite database"), std::string::npos) << w.lines[0];
  EXPECT_NE(w.lines[0].find(dir.db().string()), std::string::npos) << w.lines[0];
  EXPECT_EQ(read_file(dir.db()), garbage);
}

TEST(TuningStore, CorruptSqliteFileIsAMiss) {
  TempDir dir;
  {
    TuningStore store(dir.db());
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(store.store(sample_key("M=" + std::to_string(i)), sample_record("x")));
  }
  // The last connection closed has folded the WAL into the file. Keep the SQLite header (100
  // bytes), scribble over everything after it.
  ASSERT_FALSE(fs::exists(fs::path(dir.db()) += "-wal"));
  std::string bytes = read_file(dir.db());
  ASSERT_GT(bytes.size(), 200u);
  for (size_t i = 100; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(0xA5 ^ i);
  write_file(dir.db(), bytes);
  Warnings w;
  TuningStore store(dir.db(), w.sink());
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(store.lookup(sample_key("M=" + std::to_string(i))).has_value());
  store.store(sample_key("M=1"), sample_record("y"));  // may or may not work; must not crash or throw
  EXPECT_LE(w.lines.size(), 1u);
}

TEST(TuningStore, ForeignAndNewerDatabasesAreMisses) {
  TempDir dir;
  fs::create_directories(dir.db().parent_path());
  raw_sql(dir.db(), "CREATE TABLE songs(title TEXT); INSERT INTO songs VALUES('la');");
  Warnings w;
  {
    TuningStore store(dir.db(), w.sink());
    EXPECT_FALSE(store.lookup(sample_key()).has_value());
    EXPECT_FALSE(store.store(sample_key(), sample_record("x")));
  }
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("not kiln's"), std::string::npos) << w.lines[0];

  TempDir newer;
  {
    TuningStore store(newer.db());
    ASSERT_TRUE(store.store(sample_key(), sample_record("x")));
  }
  raw_sql(newer.db(), "UPDATE kiln_meta SET value = '2' WHERE key = 'schema'");
  Warnings w2;
  TuningStore store(newer.db(), w2.sink());
  EXPECT_FALSE(store.lookup(sample_key()).has_value());
  EXPECT_FALSE(store.store(sample_key(), sample_record("y")));
  ASSERT_EQ(w2.lines.size(), 1u);
  EXPECT_NE(w2.lines[0].find("schema version '2'"), std::string::npos) << w2.lines[0];
}

TEST(TuningStore, EmptyFileAndSymlink) {
  TempDir dir;
  write_file(dir.db(), "");
  ::chmod(dir.db().c_str(), 0600);
  TuningStore store(dir.db());
  EXPECT_FALSE(store.lookup(sample_key()).has_value());
  ASSERT_TRUE(store.store(sample_key(), sample_record("x")));
  EXPECT_TRUE(store.lookup(sample_key()).has_value());

  const fs::path link = dir.root() / "link.sqlite";
  fs::create_symlink(dir.db(), link);
  Warnings w;
  TuningStore via_link(link, w.sink());
  EXPECT_FALSE(via_link.lookup(sample_key()).has_value());
  ASSERT_EQ(w.lines.size(), 1u);
  EXPECT_NE(w.lines[0].find("not a regular file"), std::string::npos);
}

TEST(TuningStore, ThreadsWithTheirOwnConnectionsLoseNothing) {
  TempDir dir;
  constexpr int kThreads = 4, kKeys = 40;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      TuningStore store(dir.db());
      for (int i = 0; i < kKeys; ++i)
        if (!store.store(sample_key(fmt::format("t={},i={}", t, i)), sample_record(fmt::format("w{}", t))))
          ++failures[t];
    });
  for (std::thread& t : threads) t.join();
  TuningStore reader(dir.db());
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0);
    for (int i = 0; i < kKeys; ++i) {
      auto hit = reader.lookup(sample_key(fmt::format("t={},i={}", t, i)));
      ASSERT_TRUE(hit.has_value()) << t << " " << i;
      EXPECT_EQ(hit->winner, fmt::format("w{}", t));
    }
  }
}

TEST(TuningStore, ProcessesWritingAtOnceLoseNothing) {
  TempDir dir;
  constexpr int kChildren = 4, kKeys = 40;
  // Each child has its own connection, opened after the fork.
  const std::vector<int> statuses = test_common::run_children_together(kChildren, [&](int c) {
    int failed = 0;
    TuningStore store(dir.db());
    for (int i = 0; i < kKeys; ++i) {
      if (!store.store(sample_key(fmt::format("p={},i={}", c, i)), sample_record(fmt::format("p{}", c)))) ++failed;
      // another child's key may simply not be there yet: reading must just not fail
      (void)store.lookup(sample_key(fmt::format("p={},i={}", (c + 1) % kChildren, i / 2)));
    }
    return failed == 0 ? 0 : 1;
  });
  for (int status : statuses) EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  TuningStore reader(dir.db());
  for (int c = 0; c < kChildren; ++c)
    for (int i = 0; i < kKeys; ++i) {
      auto hit = reader.lookup(sample_key(fmt::format("p={},i={}", c, i)));
      ASSERT_TRUE(hit.has_value()) << c << " " << i;
      EXPECT_EQ(hit->winner, fmt::format("p{}", c));
    }
}

TEST(TuningStore, WriterKilledMidwayLeavesAUsableDatabase) {
  TempDir dir;
  {
    TuningStore store(dir.db());
    ASSERT_TRUE(store.store(sample_key("before"), sample_record("kept")));
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    TuningStore store(dir.db());
    for (int i = 0;; ++i) store.store(sample_key(fmt::format("i={}", i)), sample_record(std::string(2000, 'x')));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  Warnings w;
  TuningStore store(dir.db(), w.sink());
  ASSERT_TRUE(store.lookup(sample_key("before")).has_value());
  EXPECT_EQ(store.lookup(sample_key("before"))->winner, "kept");
  EXPECT_TRUE(store.lookup(sample_key("i=0")).has_value()) << "the child wrote for 150 ms";
  EXPECT_TRUE(store.store(sample_key("after"), sample_record("new")));
  EXPECT_TRUE(w.lines.empty()) << w.lines[0];
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* check = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(check, 0)), "ok");
  sqlite3_finalize(check);
  sqlite3_close(db);
}

TEST(TuningStore, AttemptMarkersOfOtherProcesses) {
  TempDir dir;
  TuningStore store(dir.db());
  ASSERT_TRUE(store.mark_attempt(sample_key(), "mine"));
  EXPECT_TRUE(store.attempts(sample_key()).empty()) << "this process's own markers are not listed";
  store.clear_attempt(sample_key(), "mine");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    TuningStore child(dir.db());
    ::_exit(child.mark_attempt(sample_key(), "crasher") ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto found = store.attempts(sample_key());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].choice, "crasher");
  EXPECT_EQ(found[0].pid, pid);
  EXPECT_EQ(found[0].host, this_host_name());
  EXPECT_TRUE(store.attempts(sample_key("M=other")).empty());
}

}  // namespace
}  // namespace kiln::autotune::testing
