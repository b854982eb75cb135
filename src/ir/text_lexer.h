// Tokens of the IR text form (see ir/printer.h for the format). Every token knows its line and column
// so that each parse error can point at the place.
#pragma once
#include <string>
#include <string_view>

namespace kiln::irtext {

enum class TokKind { End, Ident, Value, Number, String, Punct };

struct Token {
  TokKind kind = TokKind::End;
  std::string text;  // decoded: a value name without '%' and quotes, a string without quotes
  int line = 1, col = 1;
  bool quoted = false;  // Ident-like token written as a string ("...")

  bool is_punct(std::string_view p) const { return kind == TokKind::Punct && text == p; }
  bool is_word(std::string_view w) const { return kind == TokKind::Ident && text == w; }
  std::string describe() const;  // for "expected X, found Y"
};

// Throws UserError("IR text L:C: message").
[[noreturn]] void fail_at(int line, int col, const std::string& message);

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}
  Token next();

 private:
  char peek(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  bool at_end() const { return pos_ >= src_.size(); }
  void advance();
  void skip_space_and_comments();
  std::string read_name_chars();
  std::string read_quoted(int line, int col);  // at the opening quote

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace kiln::irtext
