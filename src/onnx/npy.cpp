// NumPy .npy files: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#include <algorithm>
#include <cstring>

#include "onnx/file_util.h"
#include "kiln/tensor_io.h"
#include "onnx/tensor_proto.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrEntry {
  std::string_view descr;
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"<f2", DType::f16}, {"<f4", DType::f32}, {"<f8", DType::f64}, {"<i8", DType::i64},
    {"<i4", DType::i32}, {"|i1", DType::i8},  {"|u1", DType::u8},  {"|b1", DType::boolean},
    {"<i2", DType::i16}, {"<u2", DType::u16}, {"<u4", DType::u32}, {"<u8", DType::u64},
};

// A strict reader of the header: a Python dict literal with exactly the keys descr, fortran_order and
// shape, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape, int64_t max_rank) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_space();
    expect('{');
    skip_space();
    while (peek() != '}') {
      std::string key = string_literal();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        once(have_descr, key);
        if (peek() != '\'' && peek() != '"') fail("descr is not a simple type string (structured arrays are not supported)");
        descr = string_literal();
      } else if (key == "fortran_order") {
        once(have_fortran, key);
        fortran = boolean();
      } else if (key == "shape") {
        once(have_shape, key);
        shape = tuple(max_rank);
      } else {
        fail(fmt::format("unexpected key '{}'", key));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        fail("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != s_.size()) fail("text after the closing '}'");
    if (!have_descr || !have_fortran || !have_shape) fail("missing one of descr, fortran_order, shape");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    user_error("{}: bad .npy header at byte {}: {}", what_, pos_, why);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n')) ++pos_;
  }
  void once(bool& seen, const std::string& key) {
    if (seen) fail(fmt::format("key '{}' appears twice", key));
    seen = true;
  }
  std::string string_literal() {
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string r(s_.substr(pos_ + 1, end - pos_ - 1));
    if (r.find('\\') != std::string::npos) fail("escapes in strings are not supported");
    pos_ = end + 1;
    return r;
  }
  bool boolean() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t integer() {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v))
        fail("dimension overflows 64 bits");
      ++pos_;
    }
    if (pos_ == start) fail("expected a non-negative integer");
    if (peek() == 'L') ++pos_;  // Python 2 longs, written by old NumPy
    return v;
  }
  std::vector<int64_t> tuple(int64_t max_rank) {
    std::vector<int64_t> dims;
    expect('(');
    skip_space();
    bool trailing_comma = false;
    while (peek() != ')') {
      if (static_cast<int64_t>(dims.size()) >= max_rank) fail(fmt::format("rank over the limit of {} (max_rank)", max_rank));
      dims.push_back(integer());
      skip_space();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        skip_space();
        trailing_comma = true;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in shape");
      }
    }
    if (dims.size() == 1 && !trailing_comma) fail("a one-element shape needs a trailing comma");
    ++pos_;
    return dims;
  }

  std::string_view s_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint32_t read_le(std::string_view b, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const Options& options, const std::string& what) {
  if (bytes.size() < 6 || bytes.substr(0, 6) != kMagic) user_error("{}: not a .npy file (bad magic)", what);
  if (bytes.size() < 8) user_error("{}: .npy file is truncated in its header", what);
  int major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) user_error("{}: .npy format version {}.{} is not supported", what, major, minor);
  size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) user_error("{}: .npy file is truncated in its header", what);
  uint64_t header_len = read_le(bytes, 8, len_bytes);
  uint64_t data_offset = 8 + len_bytes + header_len;
  if (data_offset > bytes.size())
    user_error("{}: .npy header says {} bytes, but the file has only {}", what, header_len, bytes.size());
  std::string_view header = bytes.substr(8 + len_bytes, header_len);
  for (char c : header)
    if (static_cast<unsigned char>(c) > 0x7e || (c < 0x20 && c != '\n'))
      user_error("{}: .npy header has a non-ASCII or control byte", what);

  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  HeaderParser(header, what).parse(descr, fortran, shape, options.max_rank);
  if (fortran) user_error("{}: Fortran-order .npy arrays are not supported (save with C order)", what);
  if (!descr.empty() && descr[0] == '>') user_error("{}: big-endian .npy data ('{}') is not supported", what, descr);
  if (descr.find('O') != std::string::npos) user_error("{}: object arrays ('{}') are not supported", what, descr);
  const DescrEntry* entry = nullptr;
  for (const auto& e : kDescrs)
    if (e.descr == descr) entry = &e;
  if (!entry) user_error("{}: .npy dtype '{}' is not supported", what, descr);

  int64_t nbytes = checked_tensor_bytes(entry->dtype, shape, options, what);
  uint64_t have = bytes.size() - data_offset;
  if (have != static_cast<uint64_t>(nbytes))
    user_error("{}: .npy data is {} bytes, but shape ({}) of {} needs {}", what, have, fmt::join(shape, ","),
               descr, nbytes);
  Tensor t = Tensor::empty(entry->dtype, shape);
  if (nbytes) std::memcpy(t.raw(), bytes.data() + data_offset, static_cast<size_t>(nbytes));
  if (entry->dtype == DType::boolean) {
    auto* b = static_cast<unsigned char*>(t.raw());
    for (int64_t i = 0; i < nbytes; ++i)
      if (b[i] > 1) user_error("{}: byte {} of a bool array is {}, not 0 or 1", what, i, b[i]);
  }
  return t;
}

Tensor read_npy(const std::string& path, const Options& options) {
  // The whole file is the tensor plus a small header.
  int64_t limit = options.max_tensor_bytes > INT64_MAX - (int64_t{1} << 20) ? INT64_MAX
                                                                             : options.max_tensor_bytes + (int64_t{1} << 20);
  std::string bytes = read_file_limited(path, limit, ".npy file");
  return parse_npy(bytes, options, fmt::format(".npy file '{}'", path));
}

std::string npy_header(const Tensor& t) {
  std::string_view descr;
  for (const auto& e : kDescrs)
    if (e.dtype == t.dtype()) descr = e.descr;
  if (descr.empty()) user_error("a {} tensor cannot be saved as .npy (NumPy has no such type)", dtype_name(t.dtype()));
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += fmt::format("{}, ", d);
  if (t.rank() == 1) shape.pop_back();  // "(5,)"
  else if (t.rank() > 1) shape.resize(shape.size() - 2);
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // Like NumPy: room for the first dim to grow to 21 digits, then spaces so that the data starts on a
  // 64-byte boundary; the header ends with '\n'. Same bytes as numpy.save.
  if (t.rank() > 0) dict.append(21 - std::min<size_t>(21, std::to_string(t.shape()[0]).size()), ' ');
  bool v2 = dict.size() + 11 + 63 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string header = npy_header(t);
  std::string_view pieces[] = {header, std::string_view(static_cast<const char*>(t.raw()), t.nbytes())};
  write_file_atomic(path, pieces);
}

}  // namespace kiln
