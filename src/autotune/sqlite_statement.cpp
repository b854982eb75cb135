// See sqlite_statement.h.
#include "autotune/sqlite_statement.h"

namespace kiln::autotune {

bool SqliteConnection::open(const std::string& path, int flags, std::string& why) {
  close();
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    close();
    return false;
  }
  sqlite3_extended_result_codes(db_, 0);
  return true;
}

void SqliteConnection::close() {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

int SqliteConnection::exec(const char* sql, std::string& why) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc != SQLITE_OK) why = message ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return rc;
}

std::string SqliteConnection::last_error() const { return db_ ? sqlite3_errmsg(db_) : "no connection"; }

SqliteStatement::SqliteStatement(sqlite3* db, std::string_view sql) {
  prepare_code_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (prepare_code_ == SQLITE_OK && !stmt_) prepare_code_ = SQLITE_ERROR;  // empty statement
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

void SqliteStatement::bind(int index, std::string_view text) {
  if (!stmt_) return;
  int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_code_ == SQLITE_OK) bind_code_ = rc;
}

void SqliteStatement::bind(int index, int64_t value) {
  if (!stmt_) return;
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_code_ == SQLITE_OK) bind_code_ = rc;
}

int SqliteStatement::step() {
  if (!stmt_) return prepare_code_;
  if (bind_code_ != SQLITE_OK) return bind_code_;
  return sqlite3_step(stmt_);
}

std::string SqliteStatement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

int64_t SqliteStatement::column_int(int column) const { return sqlite3_column_int64(stmt_, column); }

}  // namespace kiln::autotune
