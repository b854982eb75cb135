// Helpers for the ONNX import tests: temporary folders and small models built in code.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <initializer_list>
#include <onnx/onnx.pb.h>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "kiln/options.h"
#include "kiln/session.h"
#include "kiln/tensor.h"
#include "onnx/import.h"
#include "support/error.h"

namespace kiln::testing {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kiln_onnx_test_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

// A dim for value infos: a size, a parameter name, or unnamed (std::monostate).
using TestDim = std::variant<int64_t, std::string, std::monostate>;

inline ::onnx::ModelProto make_model(int64_t opset = 13, int64_t ir_version = 8) {
  ::onnx::ModelProto m;
  m.set_ir_version(ir_version);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

inline void set_value_info(::onnx::ValueInfoProto* vi, const std::string& name, int elem,
                           const std::vector<TestDim>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (auto* v = std::get_if<int64_t>(&d)) dim->set_dim_value(*v);
    else if (auto* s = std::get_if<std::string>(&d)) dim->set_dim_param(*s);
  }
}

inline void add_input(::onnx::ModelProto& m, const std::string& name, const std::vector<TestDim>& dims,
                      int elem = ::onnx::TensorProto::FLOAT) {
  set_value_info(m.mutable_graph()->add_input(), name, elem, dims);
}
inline void add_output(::onnx::ModelProto& m, const std::string& name, const std::vector<TestDim>& dims = {},
                       int elem = ::onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_output();
  if (dims.empty()) vi->set_name(name);
  else set_value_info(vi, name, elem, dims);
}

inline ::onnx::NodeProto* add_node(::onnx::ModelProto& m, const std::string& op, std::vector<std::string> ins,
                                   std::vector<std::string> outs, const std::string& name = {}) {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}

inline void attr_int(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr_ints(::onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void attr_float(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void attr_floats(::onnx::NodeProto* n, const std::string& name, std::vector<float> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}

// An f32 initializer with raw_data.
inline ::onnx::TensorProto* add_f32_init(::onnx::ModelProto& m, const std::string& name, std::vector<int64_t> dims,
                                         const std::vector<float>& values) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

inline Graph import_model(const ::onnx::ModelProto& m, const fs::path& dir = ".", const Options& o = Options{}) {
  return import_onnx_model(m, dir, o);
}

// Imports and expects a UserError whose message contains `needle`.
inline void expect_user_error(const ::onnx::ModelProto& m, const std::string& needle, const fs::path& dir = ".",
                              const Options& o = Options{}) {
  try {
    import_onnx_model(m, dir, o);
    ADD_FAILURE() << "expected a UserError containing '" << needle << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

// n samples of a standard normal distribution, the same for the same seed.
inline std::vector<float> random_normal(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = nd(rng);
  return v;
}

inline const Node* find_node(const Graph& g, OpKind op, int nth = 0) {
  for (const Node& n : g.nodes)
    if (n.op == op && nth-- == 0) return &n;
  return nullptr;
}

// Every mode a model runs in, for tests that expect the same outputs from each.
constexpr Mode kModes[] = {Mode::eager, Mode::compiled, Mode::reference};

// An f32 initializer of a subgraph, with raw_data.
inline void f32_init(::onnx::GraphProto& g, const std::string& name, std::vector<int64_t> dims,
                     const std::vector<float>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

// A GRAPH attribute (an If's branch, a Loop's or Scan's body).
inline void attr_graph(::onnx::NodeProto* n, const std::string& name, const ::onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

inline Tensor f32(std::vector<int64_t> shape, const std::vector<float>& v) {
  return Tensor::from_vector<float>(DType::f32, std::move(shape), v);
}
inline Tensor flag(bool v) { return Tensor::from_vector<int>(DType::boolean, {}, {v ? 1 : 0}); }

// A tensor's elements as doubles.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.as_double(i));
  return v;
}

}  // namespace kiln::testing
