// Lexical rules shared by the IR text printer and parser, so that what one writes the other reads.
#pragma once
#include <string>
#include <string_view>

namespace kiln::irtext {

// Characters of a bare (unquoted) name: value names after '%', op/attribute/dim/graph names.
inline bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
inline bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// True if `s` can be printed without quotes: after '%' any run of name chars; elsewhere it must also
// start like an identifier (a leading digit or sign would read as a number).
bool is_bare_value_name(std::string_view s);
bool is_bare_ident(std::string_view s);

// "text" with \\ \" \n \t \r and \xHH for other control bytes; bytes >= 0x80 stay as they are (UTF-8).
std::string quote(std::string_view s);
// `s` bare when possible, else quoted.
std::string ident_or_quoted(std::string_view s);
std::string value_ref(std::string_view name);  // %name or %"na me"

// Shortest text that reads back to exactly the same number; nan/-nan/inf/-inf for the specials.
std::string format_float(float v);
std::string format_double(double v);

}  // namespace kiln::irtext
