// External data: containment in the model's folder, size checks, one shared mapping per file.
#include <gtest/gtest.h>
#include <unistd.h>

#include "onnx/external_data.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;

void set_external(TP* t, const std::string& location, std::optional<int64_t> offset = {},
                  std::optional<int64_t> length = {}) {
  t->set_data_location(TP::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset) add("offset", std::to_string(*offset));
  if (length) add("length", std::to_string(*length));
}

TP* add_external_init(::onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims,
                      const std::string& location, std::optional<int64_t> offset = {},
                      std::optional<int64_t> length = {}, int dtype = TP::FLOAT) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(dtype);
  for (int64_t d : dims) t->add_dims(d);
  set_external(t, location, offset, length);
  return t;
}

// A model y = (a + b): a and b come from external data.
::onnx::ModelProto two_weight_model() {
  auto m = make_model();
  add_node(m, "Add", {"a", "b"}, {"y"});
  add_output(m, "y");
  return m;
}

std::string floats_bytes(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    float f = static_cast<float>(i);
    s.append(reinterpret_cast<const char*>(&f), 4);
  }
  return s;
}

const Tensor& constant(const Graph& g, const char* name) { return *g.value(*g.find_value(name)).constant; }

TEST(OnnxExternalData, MapsOnceAndSharesTheMapping) {
  TempDir dir;
  write_bytes(dir.file("w.bin"), floats_bytes(16));
  auto m = two_weight_model();
  add_external_init(m, "a", {2, 2}, "w.bin", 0, 16);
  add_external_init(m, "b", {2, 2}, "w.bin", 32, 16);
  Graph g = import_model(m, dir.path());
  const Tensor& a = constant(g, "a");
  const Tensor& b = constant(g, "b");
  EXPECT_EQ(a.data<float>()[3], 3.0f);
  EXPECT_EQ(b.data<float>()[0], 8.0f);
  // Both wrap the same mapping: their distance is the distance of their offsets.
  EXPECT_EQ(static_cast<const char*>(b.raw()) - static_cast<const char*>(a.raw()), 32);
}

TEST(OnnxExternalData, UnalignedOffsetIsCopied) {
  TempDir dir;
  std::string bytes = "xx" + floats_bytes(4);
  write_bytes(dir.file("w.bin"), bytes);
  auto m = two_weight_model();
  add_external_init(m, "a", {4}, "w.bin", 2, 16);
  add_external_init(m, "b", {4}, "w.bin", 2);  // length absent: the rest of the file
  Graph g = import_model(m, dir.path());
  const Tensor& a = constant(g, "a");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw()) % 4, 0u);
  EXPECT_EQ(a.data<float>()[1], 1.0f);
  EXPECT_EQ(a.data<float>()[3], 3.0f);
  EXPECT_NE(a.raw(), constant(g, "b").raw());
}

TEST(OnnxExternalData, SubfolderAndInsideSymlinkAreFine) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "sub");
  write_bytes(dir.file("sub/w.bin"), floats_bytes(4));
  std::filesystem::create_symlink("sub/w.bin", dir.path() / "link.bin");
  auto m = two_weight_model();
  add_external_init(m, "a", {4}, "sub/w.bin");
  add_external_init(m, "b", {4}, "link.bin");
  Graph g = import_model(m, dir.path());
  EXPECT_EQ(constant(g, "b").data<float>()[2], 2.0f);
}

TEST(OnnxExternalData, BoolBytesAreNormalised) {
  TempDir dir;
  write_bytes(dir.file("b.bin"), std::string("\x00\x01\x07\x00", 4));
  auto m = make_model();
  add_external_init(m, "a", {4}, "b.bin", {}, {}, TP::BOOL);
  add_node(m, "Not", {"a"}, {"y"});
  add_output(m, "y");
  Graph g = import_model(m, dir.path());
  EXPECT_EQ(constant(g, "a").to_int64_vector(), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(OnnxExternalData, EscapesAreRejected) {
  TempDir root;
  std::filesystem::create_directory(root.path() / "model");
  write_bytes(root.file("outside.bin"), floats_bytes(4));
  std::filesystem::create_symlink(root.path() / "outside.bin", root.path() / "model" / "abs_link.bin");
  std::filesystem::create_symlink("../outside.bin", root.path() / "model" / "rel_link.bin");
  std::filesystem::create_symlink("..", root.path() / "model" / "up");
  std::filesystem::path model_dir = root.path() / "model";
  struct Case {
    std::string location;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{{root.file("outside.bin"), "absolute path"},
                                         {"../outside.bin", "'..' component"},
                                         {"x/../../outside.bin", "'..' component"},
                                         {"abs_link.bin", "outside the model's folder"},
                                         {"rel_link.bin", "outside the model's folder"},
                                         {"up/outside.bin", "outside the model's folder"},
                                         {"", "no 'location'"}}) {
    SCOPED_TRACE(c.location);
    auto m = make_model();
    add_external_init(m, "a", {4}, c.location);
    add_node(m, "Relu", {"a"}, {"y"});
    add_output(m, "y");
    expect_user_error(m, c.needle, model_dir);
  }
}

TEST(OnnxExternalData, SizesAreChecked) {
  TempDir dir;
  write_bytes(dir.file("w.bin"), floats_bytes(16));  // 64 bytes
  std::filesystem::create_directory(dir.path() / "folder");
  struct Case {
    std::string location;
    std::optional<int64_t> offset, length;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{{"w.bin", 48, 24, "runs past the end"},
                                         {"w.bin", 100, {}, "past the end"},
                                         {"w.bin", 0, 20, "does not match"},
                                         {"w.bin", {}, {}, "does not match"},  // 64 bytes for 24
                                         {"w.bin", INT64_MAX - 8, 24, "past the end"},
                                         {"missing.bin", 0, 24, "cannot open"},
                                         {"folder", 0, 24, "not a regular file"}}) {
    SCOPED_TRACE(c.location);
    auto m = make_model();
    add_external_init(m, "a", {6}, c.location, c.offset, c.length);
    add_node(m, "Relu", {"a"}, {"y"});
    add_output(m, "y");
    expect_user_error(m, c.needle, dir.path());
  }
  for (const char* bad : {"-8", "12abc", "", "18446744073709551616", "+4"}) {
    SCOPED_TRACE(bad);
    auto m = make_model();
    auto* t = add_external_init(m, "a", {6}, "w.bin");
    auto* e = t->add_external_data();
    e->set_key("offset"), e->set_value(bad);
    add_node(m, "Relu", {"a"}, {"y"});
    add_output(m, "y");
    expect_user_error(m, "not a non-negative integer", dir.path());
  }
}

TEST(OnnxExternalData, OverflowingOffsetPlusLength) {
  TempDir dir;
  write_bytes(dir.file("w.bin"), floats_bytes(16));
  auto m = make_model();
  add_external_init(m, "a", {6}, "w.bin", 8, INT64_MAX);
  add_node(m, "Relu", {"a"}, {"y"});
  add_output(m, "y");
  expect_user_error(m, "overflows", dir.path());
}

TEST(OnnxExternalData, LocationCheckWithoutFileSystem) {
  EXPECT_NO_THROW(check_external_location("weights.bin", "t"));
  EXPECT_NO_THROW(check_external_location("a/..b/c..", "t"));
  EXPECT_THROW(check_external_location("..", "t"), UserError);
  EXPECT_THROW(check_external_location("a/..", "t"), UserError);
  EXPECT_THROW(check_external_location("a\\..\\b", "t"), UserError);
  EXPECT_THROW(check_external_location(std::string("a\0b", 3), "t"), UserError);
}

}  // namespace
}  // namespace kiln::testing
