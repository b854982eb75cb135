// Thin RAII over sqlite3's C API for the tuning store: a connection and prepared statements that
// report failure as a result code (the store turns codes into warnings; nothing here throws).
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::autotune {

class SqliteConnection {
 public:
  SqliteConnection() = default;
  ~SqliteConnection() { close(); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  // sqlite3_open_v2 with `flags`; false with `why` set on failure (the handle is closed then).
  bool open(const std::string& path, int flags, std::string& why);
  void close();
  sqlite3* get() const { return db_; }
  explicit operator bool() const { return db_ != nullptr; }

  // Runs statements without results (";"-separated); the sqlite result code, `why` on failure.
  int exec(const char* sql, std::string& why);
  // The message of the connection's last error.
  std::string last_error() const;

 private:
  sqlite3* db_ = nullptr;
};

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, std::string_view sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // The result of preparing (SQLITE_OK when usable).
  int prepare_code() const { return prepare_code_; }
  // Binds parameter `index` (1-based); binding failures surface at step().
  void bind(int index, std::string_view text);
  void bind(int index, int64_t value);
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step();
  std::string column_text(int column) const;
  int64_t column_int(int column) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int prepare_code_ = SQLITE_ERROR;
  int bind_code_ = SQLITE_OK;
};

}  // namespace kiln::autotune
