// The SQLite tuning store (see tuning_store.h).
#include "autotune/tuning_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "autotune/sqlite_statement.h"
#include "support/error.h"

namespace kiln::autotune {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyTimeoutMs = 15000;
constexpr const char* kFormat = "kiln-tuning";

constexpr const char* kKeyColumns =
    "op_signature TEXT NOT NULL, shape_key TEXT NOT NULL, dtype TEXT NOT NULL, device_key TEXT NOT NULL, "
    "library_versions TEXT NOT NULL, settings_key TEXT NOT NULL, kiln_version TEXT NOT NULL";
constexpr const char* kKeyNames =
    "op_signature, shape_key, dtype, device_key, library_versions, settings_key, kiln_version";
constexpr const char* kKeyMatch =
    "op_signature = ?1 AND shape_key = ?2 AND dtype = ?3 AND device_key = ?4 AND library_versions = ?5 AND "
    "settings_key = ?6 AND kiln_version = ?7";

// Binds the key's fields to parameters 1..7.
void bind_key(SqliteStatement& s, const TuningKey& k) {
  s.bind(1, k.op_signature);
  s.bind(2, k.shape_key);
  s.bind(3, k.dtype);
  s.bind(4, k.device_key);
  s.bind(5, k.library_versions);
  s.bind(6, k.settings_key);
  s.bind(7, k.kiln_version);
}

// A result code that means the file itself is bad (as opposed to busy or out of space).
bool file_is_bad(int rc) { return rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT; }

// mkdir -p, mode 0700 for what it creates; false with `why` on failure.
bool make_private_dirs(const fs::path& dir, std::string& why) {
  fs::path partial;
  for (const fs::path& part : dir) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) == 0) {
      ::chmod(partial.c_str(), 0700);
    } else if (errno != EEXIST) {
      why = fmt::format("cannot create folder '{}': {}", partial.string(), std::strerror(errno));
      return false;
    }
  }
  return true;
}

int64_t now_unix() { return static_cast<int64_t>(std::time(nullptr)); }

}  // namespace

void warn_to_stderr(const std::string& line) { std::fprintf(stderr, "[autotune] warning: %s\n", line.c_str()); }

void snapshot_tuning_store(const std::filesystem::path& from, const std::filesystem::path& to) {
  SqliteConnection db;
  std::string why;
  if (!db.open(from.string(), SQLITE_OPEN_READONLY, why)) user_error("cannot read the tuning store {}: {}", from.string(), why);
  sqlite3_busy_timeout(db.get(), 5000);
  SqliteStatement vacuum(db.get(), "VACUUM INTO ?1");
  vacuum.bind(1, to.string());
  if (vacuum.prepare_code() != SQLITE_OK || vacuum.step() != SQLITE_DONE)
    user_error("cannot copy the tuning store {} to {}: {}", from.string(), to.string(), db.last_error());
}

std::string this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

struct TuningStore::Connection {
  SqliteConnection db;
  bool schema_ready = false;
};

TuningStore::TuningStore(fs::path file, WarnSink warn) : file_(std::move(file)), warn_(std::move(warn)) {
  if (!warn_) warn_ = warn_to_stderr;
}

TuningStore::~TuningStore() = default;

void TuningStore::warn_once(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  warn_(fmt::format("tuning database '{}': {}", file_.string(), what));
}

void TuningStore::fail(const std::string& what) {
  unusable_ = what;
  conn_.reset();
  warn_once(what + "; tuning results are neither read from it nor stored (delete it to start afresh)");
}

// Reads kiln_meta. `fresh`: an empty database (no tables yet) that init_schema may set up.
bool TuningStore::check_identity(bool& fresh) {
  sqlite3* db = conn_->db.get();
  fresh = false;
  {
    SqliteStatement count(db, "SELECT count(*) FROM sqlite_master");
    int rc = count.step();
    if (file_is_bad(rc) || file_is_bad(count.prepare_code())) {
      fail("not a SQLite database (corrupt or foreign file)");
      return false;
    }
    if (rc != SQLITE_ROW) {
      warn_once(fmt::format("cannot be read: {}", conn_->db.last_error()));
      return false;
    }
    if (count.column_int(0) == 0) {
      fresh = true;
      return true;
    }
  }
  SqliteStatement meta(db, "SELECT key, value FROM kiln_meta WHERE key IN ('format', 'schema')");
  if (meta.prepare_code() != SQLITE_OK) {
    if (meta.prepare_code() == SQLITE_ERROR) fail("a SQLite database that is not kiln's (no kiln_meta table)");
    else if (file_is_bad(meta.prepare_code())) fail("corrupt SQLite database");
    else warn_once(fmt::format("cannot be read: {}", conn_->db.last_error()));  // busy: try again next time
    return false;
  }
  std::string format, schema;
  int rc;
  while ((rc = meta.step()) == SQLITE_ROW) (meta.column_text(0) == "format" ? format : schema) = meta.column_text(1);
  if (rc != SQLITE_DONE) {
    if (file_is_bad(rc)) fail("corrupt SQLite database");
    else warn_once(fmt::format("cannot be read: {}", conn_->db.last_error()));
    return false;
  }
  if (format != kFormat) {
    fail(fmt::format("a SQLite database that is not kiln's (format '{}')", format));
    return false;
  }
  if (schema != std::to_string(kTuningStoreSchema)) {
    fail(fmt::format("schema version '{}' (this kiln reads {})", schema, kTuningStoreSchema));
    return false;
  }
  conn_->schema_ready = true;
  return true;
}

bool TuningStore::init_schema() {
  std::string why;
  // WAL lets readers go on while one process writes; a file system without shared memory keeps the
  // rollback journal (the pragma then reports another mode, which is fine).
  conn_->db.exec("PRAGMA journal_mode=WAL", why);
  const std::string sql = fmt::format(
      "BEGIN IMMEDIATE;"
      "CREATE TABLE IF NOT EXISTS kiln_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT OR IGNORE INTO kiln_meta(key, value) VALUES('format', '{}'), ('schema', '{}');"
      "CREATE TABLE IF NOT EXISTS results({}, winner TEXT NOT NULL, quality INTEGER NOT NULL, "
      "  timings TEXT NOT NULL, created INTEGER NOT NULL, PRIMARY KEY({})) WITHOUT ROWID;"
      "CREATE TABLE IF NOT EXISTS attempts({}, choice TEXT NOT NULL, pid INTEGER NOT NULL, host TEXT NOT NULL, "
      "  started INTEGER NOT NULL, PRIMARY KEY({}, choice, pid, host)) WITHOUT ROWID;"
      "COMMIT;",
      kFormat, kTuningStoreSchema, kKeyColumns, kKeyNames, kKeyColumns, kKeyNames);
  int rc = conn_->db.exec(sql.c_str(), why);
  if (rc != SQLITE_OK) {
    std::string ignored;
    conn_->db.exec("ROLLBACK", ignored);
    if (file_is_bad(rc)) fail("corrupt SQLite database");
    else warn_once(fmt::format("cannot set up the tables: {}", why));
    return false;
  }
  return true;
}

bool TuningStore::ensure_open(Want want) {
  if (!unusable_.empty()) return false;
  if (!conn_) {
    struct stat st {};
    if (::lstat(file_.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode)) {
        fail("not a regular file");
        return false;
      }
      if (st.st_uid != ::geteuid()) {
        fail("owned by another user");
        return false;
      }
    } else {
      if (want == Want::read) return false;  // nothing stored yet: a plain miss
      std::string why;
      const fs::path dir = file_.parent_path().empty() ? fs::path(".") : file_.parent_path();
      if (!make_private_dirs(dir, why)) {
        fail(why);
        return false;
      }
      // Create it 0600 ourselves: SQLite would use 0644 minus umask (its -wal and -shm files copy
      // the database's mode).
      int fd = ::open(file_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
      else if (errno != EEXIST) {
        fail(fmt::format("cannot create it: {}", std::strerror(errno)));
        return false;
      }
    }
    auto conn = std::make_unique<Connection>();
    std::string why;
    if (!conn->db.open(file_.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW, why)) {
      warn_once(fmt::format("cannot open: {}", why));
      return false;
    }
    sqlite3_busy_timeout(conn->db.get(), kBusyTimeoutMs);
    conn->db.exec("PRAGMA synchronous=NORMAL", why);
    conn_ = std::move(conn);
  }
  if (conn_->schema_ready) return true;
  bool fresh = false;
  if (!check_identity(fresh)) return false;
  if (!fresh) return true;
  if (want == Want::read) return false;  // another process may be setting it up: a miss for now
  if (!init_schema()) return false;
  return check_identity(fresh) && !fresh;
}

std::optional<TuningRecord> TuningStore::lookup(const TuningKey& key, int min_quality) {
  if (!ensure_open(Want::read)) return std::nullopt;
  SqliteStatement s(conn_->db.get(), fmt::format("SELECT winner, timings, quality, created FROM results WHERE {} "
                                                 "AND quality >= ?8",
                                                 kKeyMatch));
  bind_key(s, key);
  s.bind(8, static_cast<int64_t>(min_quality));
  int rc = s.step();
  if (rc == SQLITE_ROW) {
    TuningRecord r;
    r.winner = s.column_text(0);
    r.timings_json = s.column_text(1);
    r.quality = static_cast<int>(s.column_int(2));
    r.created_unix = s.column_int(3);
    return r;
  }
  if (file_is_bad(rc)) fail("corrupt SQLite database");
  else if (rc != SQLITE_DONE) warn_once(fmt::format("lookup failed: {}", conn_->db.last_error()));
  return std::nullopt;
}

bool TuningStore::store(const TuningKey& key, const TuningRecord& record, bool replace_any) {
  if (!ensure_open(Want::write)) return false;
  std::string why;
  int rc = conn_->db.exec("BEGIN IMMEDIATE", why);
  if (rc == SQLITE_OK) {
    SqliteStatement s(conn_->db.get(),
                      fmt::format("INSERT INTO results({}, winner, quality, timings, created) "
                                  "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                                  "ON CONFLICT({}) DO UPDATE SET winner = excluded.winner, quality = excluded.quality, "
                                  "timings = excluded.timings, created = excluded.created "
                                  "WHERE excluded.quality >= results.quality OR ?12",
                                  kKeyNames, kKeyNames));
    bind_key(s, key);
    s.bind(8, record.winner);
    s.bind(9, static_cast<int64_t>(record.quality));
    s.bind(10, record.timings_json);
    s.bind(11, record.created_unix ? record.created_unix : now_unix());
    s.bind(12, static_cast<int64_t>(replace_any));
    rc = s.step();
    if (rc == SQLITE_DONE) rc = conn_->db.exec("COMMIT", why);
    else why = conn_->db.last_error();
  }
  if (rc == SQLITE_OK) return true;
  std::string ignored;
  conn_->db.exec("ROLLBACK", ignored);
  if (file_is_bad(rc)) fail("corrupt SQLite database");
  else warn_once(fmt::format("result not stored: {}", why));
  return false;
}

bool TuningStore::mark_attempt(const TuningKey& key, const std::string& choice) {
  if (!ensure_open(Want::write)) return false;
  SqliteStatement s(conn_->db.get(), fmt::format("INSERT OR REPLACE INTO attempts({}, choice, pid, host, started) "
                                                 "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                                                 kKeyNames));
  bind_key(s, key);
  s.bind(8, choice);
  s.bind(9, static_cast<int64_t>(::getpid()));
  s.bind(10, this_host_name());
  s.bind(11, now_unix());
  int rc = s.step();  // one statement: its own transaction
  if (rc == SQLITE_DONE) return true;
  if (file_is_bad(rc)) fail("corrupt SQLite database");
  else warn_once(fmt::format("attempt marker not stored: {}", conn_->db.last_error()));
  return false;
}

void TuningStore::clear_attempt(const TuningKey& key, const std::string& choice) {
  if (!conn_ || !conn_->schema_ready) return;
  SqliteStatement s(conn_->db.get(),
                    fmt::format("DELETE FROM attempts WHERE {} AND choice = ?8 AND pid = ?9 AND host = ?10", kKeyMatch));
  bind_key(s, key);
  s.bind(8, choice);
  s.bind(9, static_cast<int64_t>(::getpid()));
  s.bind(10, this_host_name());
  int rc = s.step();
  if (rc != SQLITE_DONE) warn_once(fmt::format("attempt marker not cleared: {}", conn_->db.last_error()));
}

std::vector<TuningAttempt> TuningStore::attempts(const TuningKey& key) {
  std::vector<TuningAttempt> found;
  if (!ensure_open(Want::read)) return found;
  SqliteStatement s(conn_->db.get(), fmt::format("SELECT choice, pid, host, started FROM attempts WHERE {} "
                                                 "AND NOT (pid = ?8 AND host = ?9) ORDER BY started",
                                                 kKeyMatch));
  bind_key(s, key);
  s.bind(8, static_cast<int64_t>(::getpid()));
  s.bind(9, this_host_name());
  int rc;
  while ((rc = s.step()) == SQLITE_ROW)
    found.push_back({s.column_text(0), s.column_int(1), s.column_text(2), s.column_int(3)});
  if (file_is_bad(rc)) fail("corrupt SQLite database");
  return found;
}

}  // namespace kiln::autotune
