#include "ir/text_lexer.h"

#include <fmt/format.h>

#include "ir/irtext.h"
#include "support/error.h"

namespace kiln::irtext {

void fail_at(int line, int col, const std::string& message) {
  throw UserError(fmt::format("IR text {}:{}: {}", line, col, message));
}

std::string Token::describe() const {
  constexpr size_t kMax = 40;  // keep messages short whatever the input
  auto clip = [&](const std::string& s) { return s.size() > kMax ? s.substr(0, kMax) + "..." : s; };
  switch (kind) {
    case TokKind::End: return "the end of the text";
    case TokKind::Ident: return quoted ? clip(quote(text)) : "'" + clip(text) + "'";
    case TokKind::Value: return clip(value_ref(text));
    case TokKind::Number: return "number " + clip(text);
    case TokKind::String: return "string " + clip(quote(text));
    case TokKind::Punct: return "'" + text + "'";
  }
  return "?";
}

void Lexer::advance() {
  if (src_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::skip_space_and_comments() {
  while (!at_end()) {
    char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (!at_end() && peek() != '\n') advance();
    } else {
      break;
    }
  }
}

std::string Lexer::read_name_chars() {
  size_t start = pos_;
  while (!at_end() && is_name_char(peek())) advance();
  return std::string(src_.substr(start, pos_ - start));
}

std::string Lexer::read_quoted(int line, int col) {
  advance();  // opening quote
  std::string r;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  while (true) {
    if (at_end() || peek() == '\n') fail_at(line, col, "unterminated string");
    char c = peek();
    if (c == '"') {
      advance();
      return r;
    }
    if (c != '\\') {
      r += c;
      advance();
      continue;
    }
    int esc_line = line_, esc_col = col_;
    advance();
    char e = peek();
    switch (e) {
      case '\\': r += '\\'; break;
      case '"': r += '"'; break;
      case 'n': r += '\n'; break;
      case 't': r += '\t'; break;
      case 'r': r += '\r'; break;
      case 'x': {
        int hi = hex(peek(1)), lo = hex(peek(2));
        if (hi < 0 || lo < 0) fail_at(esc_line, esc_col, "\\x needs two hex digits");
        r += static_cast<char>(hi * 16 + lo);
        advance();
        advance();
        break;
      }
      default: fail_at(esc_line, esc_col, "unknown escape in string (use \\\\ \\\" \\n \\t \\r or \\xHH)");
    }
    advance();
  }
}

Token Lexer::next() {
  skip_space_and_comments();
  Token t;
  t.line = line_;
  t.col = col_;
  if (at_end()) return t;
  char c = peek();
  if (c == '"') {
    t.kind = TokKind::String;
    t.text = read_quoted(t.line, t.col);
    t.quoted = true;
  } else if (c == '%') {
    advance();
    t.kind = TokKind::Value;
    if (peek() == '"') {
      t.text = read_quoted(line_, col_);
      t.quoted = true;
    } else {
      t.text = read_name_chars();
      if (t.text.empty()) fail_at(t.line, t.col, "expected a value name after '%'");
    }
  } else if (is_ident_start(c)) {
    t.kind = TokKind::Ident;
    t.text = read_name_chars();
  } else if ((c >= '0' && c <= '9') ||
             ((c == '-' || c == '+') && (is_name_char(peek(1))))) {
    // Numbers, including -inf / nan and exponents (1e-05); the parser checks the spelling.
    t.kind = TokKind::Number;
    size_t start = pos_;
    advance();
    while (!at_end()) {
      char d = peek();
      char prev = src_[pos_ - 1];
      bool exponent_sign = (d == '-' || d == '+') && (prev == 'e' || prev == 'E');
      if (!is_name_char(d) && !exponent_sign) break;
      advance();
    }
    t.text = std::string(src_.substr(start, pos_ - start));
  } else if (c == '-' && peek(1) == '>') {
    t.kind = TokKind::Punct;
    t.text = "->";
    advance();
    advance();
  } else if (std::string_view("()[]{},:=~@?<>").find(c) != std::string_view::npos) {
    t.kind = TokKind::Punct;
    t.text = std::string(1, c);
    advance();
  } else {
    auto u = static_cast<unsigned char>(c);
    fail_at(t.line, t.col,
            u >= 0x20 && u < 0x7f ? fmt::format("unexpected character '{}'", c)
                                  : fmt::format("unexpected byte 0x{:02x}", u));
  }
  return t;
}

}  // namespace kiln::irtext
