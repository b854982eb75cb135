// TensorProto and .npy files: round trips of every dtype, byte-exact NumPy output, hostile headers.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/tensor_io.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

Tensor sample(DType dtype, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(dtype, shape);
  auto* b = static_cast<unsigned char*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) b[i] = static_cast<unsigned char>(i * 37 + 11);
  if (dtype == DType::boolean)
    for (size_t i = 0; i < t.nbytes(); ++i) b[i] &= 1;
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  if (a.nbytes()) {
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
  }
}

const std::vector<std::vector<int64_t>> kShapes = {{}, {1}, {5}, {2, 3}, {0, 4}, {3, 1, 2, 1}};

TEST(OnnxTensorIo, TensorProtoRoundTripsEveryDtype) {
  TempDir dir;
  for (int d = 0; d < kNumDTypes; ++d) {
    for (const auto& shape : kShapes) {
      Tensor t = sample(static_cast<DType>(d), shape);
      SCOPED_TRACE(fmt::format("{}{}", dtype_name(t.dtype()), t.shape_string()));
      write_tensor_pb(dir.file("t.pb"), t, "input_0");
      std::string name;
      Tensor back = read_tensor_pb(dir.file("t.pb"), Options{}, &name);
      EXPECT_EQ(name, "input_0");
      expect_same(t, back);
    }
  }
}

TEST(OnnxTensorIo, NpyRoundTripsEveryNumpyDtype) {
  TempDir dir;
  for (int d = 0; d < kNumDTypes; ++d) {
    DType dtype = static_cast<DType>(d);
    if (dtype == DType::bf16) continue;
    for (const auto& shape : kShapes) {
      Tensor t = sample(dtype, shape);
      SCOPED_TRACE(fmt::format("{}{}", dtype_name(t.dtype()), t.shape_string()));
      write_npy(dir.file("t.npy"), t);
      expect_same(t, read_npy(dir.file("t.npy")));
    }
  }
  EXPECT_THROW(write_npy(dir.file("bf.npy"), sample(DType::bf16, {2})), UserError);
  EXPECT_FALSE(fs::exists(dir.file("bf.npy")));
}

// Headers exactly as numpy 1.24's np.save writes them.
TEST(OnnxTensorIo, NpyHeaderMatchesNumpy) {
  auto numpy_header = [](const std::string& dict) {
    std::string h = dict;
    h.append(128 - 10 - 1 - h.size(), ' ');
    return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + h + "\n";
  };
  EXPECT_EQ(npy_header(sample(DType::f32, {2, 3})),
            numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(20, ' ')));
  EXPECT_EQ(npy_header(sample(DType::i64, {3})),
            numpy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }" + std::string(20, ' ')));
  EXPECT_EQ(npy_header(sample(DType::boolean, {})),
            numpy_header("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
  EXPECT_EQ(npy_header(sample(DType::u8, {0, 4})),
            numpy_header("{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4), }" + std::string(20, ' ')));
}

std::string npy_with(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict + "\n";
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  size_t len_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}

TEST(OnnxTensorIo, NpyAcceptsVersions2And3AndLooseSpacing) {
  std::string data(8, '\0');
  for (int major : {2, 3}) {
    Tensor t = parse_npy(npy_with("{'descr':'<f4','fortran_order':False,'shape':(2,)}", data, major), Options{}, "t");
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{2}));
  }
  Tensor t = parse_npy(npy_with("{\"shape\": (1, 2L), \"descr\": \"<i4\", \"fortran_order\": False, }", data),
                       Options{}, "t");
  EXPECT_EQ(t.dtype(), DType::i32);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, 2}));
}

TEST(OnnxTensorIo, NpyRejectsHostileFiles) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\0');
  ASSERT_NO_THROW(parse_npy(npy_with(ok, data), Options{}, "t"));
  struct Case {
    std::string bytes;
    std::string needle;
  };
  std::string good = npy_with(ok, data);
  std::string huge_len = good;
  huge_len[8] = '\xff', huge_len[9] = '\xff';
  std::vector<Case> cases = {
      {"", "bad magic"},
      {"\x93NUMPX\x01\x00\x10\x00", "bad magic"},
      {good.substr(0, 9), "truncated"},
      {huge_len, "only"},
      {npy_with(ok, data.substr(0, 7)), "needs 8"},
      {npy_with(ok, data + "x"), "needs 8"},
      {std::string("\x93NUMPY\x04\x00", 8) + "\x10\x00", "version 4.0"},
      {npy_with("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data), "Fortran"},
      {npy_with("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data), "big-endian"},
      {npy_with("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", data), "object"},
      {npy_with("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data), "not supported"},
      {npy_with("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data), "structured"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data), "non-negative"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", data), "trailing comma"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", data), "overflow"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", data), "overflows"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data), "unexpected key"},
      {npy_with("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", data), "twice"},
      {npy_with("{'descr': '<f4', 'shape': (2,)}", data), "missing"},
      {npy_with(ok + " junk", data), "after the closing"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", data), "expected"},
      {npy_with("{'descr': '<f4\\x', 'fortran_order': False, 'shape': (2,), }", data), "escapes"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(40, '1') + ",), }", data), "overflows"},
      {npy_with("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\x01\x02"), "not 0 or 1"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,), }", "0000"),
       "max_rank"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    try {
      parse_npy(c.bytes, Options{}, "t");
      ADD_FAILURE() << "accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
    }
  }
}

TEST(OnnxTensorIo, NpyRespectsMaxTensorBytes) {
  TempDir dir;
  write_npy(dir.file("t.npy"), sample(DType::f64, {4, 4}));
  Options small;
  small.max_tensor_bytes = 64;
  EXPECT_THROW(read_npy(dir.file("t.npy"), small), UserError);
  EXPECT_NO_THROW(read_npy(dir.file("t.npy")));
}

TEST(OnnxTensorIo, TensorProtoRejectsBadFiles) {
  TempDir dir;
  write_tensor_pb(dir.file("t.pb"), sample(DType::f32, {2, 3}));
  std::string bytes;
  {
    std::ifstream f(dir.file("t.pb"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  write_bytes(dir.file("cut.pb"), bytes.substr(0, bytes.size() - 3));
  EXPECT_THROW(read_tensor_pb(dir.file("cut.pb"), Options{}), UserError);
  write_bytes(dir.file("junk.pb"), bytes + "\xff\xff\xff");
  EXPECT_THROW(read_tensor_pb(dir.file("junk.pb"), Options{}), UserError);
  ::onnx::TensorProto p;
  p.set_data_type(::onnx::TensorProto::STRING);
  p.add_dims(1);
  p.add_string_data("x");
  write_bytes(dir.file("str.pb"), p.SerializeAsString());
  EXPECT_THROW(read_tensor_pb(dir.file("str.pb"), Options{}), UserError);
  EXPECT_THROW(read_tensor_pb(dir.file("none.pb"), Options{}), UserError);
}

TEST(OnnxTensorIo, WritesAreAtomicAndReplace) {
  TempDir dir;
  write_npy(dir.file("t.npy"), sample(DType::f32, {3}));
  write_npy(dir.file("t.npy"), sample(DType::i8, {7}));
  EXPECT_EQ(read_npy(dir.file("t.npy")).shape(), (std::vector<int64_t>{7}));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1) << "temporary files left behind";
  EXPECT_THROW(write_npy(dir.file("no_such_dir/t.npy"), sample(DType::f32, {3})), UserError);
}

}  // namespace
}  // namespace kiln::testing
