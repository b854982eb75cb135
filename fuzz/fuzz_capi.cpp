// Fuzz target: bytes -> a program of C API calls (include/kiln/kiln.h), issue 20's "the C API's entry
// points". Each step takes an opcode byte and its arguments from the input: settings by table name or
// by any bytes, loads of a small model (eager and reference: no compiler process) with any mode value
// and dims, tensors of any dtype value, rank and sizes (created, or wrapped over a harness buffer),
// runs with any names, tensors and counts, the accessors with NULL handles and any index. Findings: a
// crash or sanitizer report, KILN_ERROR_INTERNAL, a failure without a message, an accepted run whose
// outputs do not describe themselves consistently.
#include <onnx/onnx.pb.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "kiln/kiln.h"

namespace {

// The model the loads read: z = Relu(x + y) (x, y: f32[batch, 4]) and w = z x W (W: f32[4, 3]).
std::string write_model() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("capi_fuzz");
  auto input = [&](const char* name) {
    onnx::ValueInfoProto* v = g->add_input();
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  input("x");
  input("y");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(3);
  for (int i = 0; i < 12; ++i) w->add_float_data(0.25f * static_cast<float>(i - 6));
  auto node = [&](const char* op, std::vector<const char*> in, const char* out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    for (const char* i : in) n->add_input(i);
    n->add_output(out);
  };
  node("Add", {"x", "y"}, "s");
  node("Relu", {"s"}, "z");
  node("MatMul", {"z", "W"}, "w");
  for (const char* name : {"z", "w"}) g->add_output()->set_name(name);
  const std::string path = (kiln::fuzz::scratch_dir("capi") / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
  return path;
}

// Reads the program's arguments; past the end every read gives 0.
class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  int64_t integer() {  // mostly small, sometimes any 64 bits
    const uint8_t b = byte();
    if (b < 240) return static_cast<int64_t>(b % 12) - 2;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte();
    return static_cast<int64_t>(v);
  }
  std::string text() {  // a length byte, then that many bytes (no NUL: C strings)
    const size_t n = byte() % 24;
    std::string s;
    for (size_t i = 0; i < n && !done(); ++i) s += static_cast<char>(byte() | 1);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

void check(kiln_status status, const char* call) {
  if (status == KILN_ERROR_INTERNAL) kiln::fuzz::fail("KILN_ERROR_INTERNAL", std::string(call) + ": " + kiln_last_error());
  if (status != KILN_OK && kiln_last_error()[0] == '\0') kiln::fuzz::fail("a failure without a message", call);
}

size_t dtype_bytes(kiln_dtype t) {
  switch (t) {
    case KILN_F64: case KILN_I64: case KILN_U64: return 8;
    case KILN_F32: case KILN_I32: case KILN_U32: return 4;
    case KILN_F16: case KILN_BF16: case KILN_I16: case KILN_U16: return 2;
    default: return 1;
  }
}

// A tensor's own account of itself: rank sizes, none negative, nbytes their product times the element.
void check_tensor(const kiln_tensor* t) {
  const size_t rank = kiln_tensor_rank(t);
  const int64_t* shape = kiln_tensor_shape(t);
  size_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) kiln::fuzz::fail("an output with a negative size", std::to_string(shape[i]));
    count *= static_cast<size_t>(shape[i]);
  }
  if (kiln_tensor_nbytes(t) != count * dtype_bytes(kiln_tensor_dtype(t)))
    kiln::fuzz::fail("an output's nbytes is not its shape's", std::to_string(kiln_tensor_nbytes(t)));
  if (count > 0 && !kiln_tensor_data(t)) kiln::fuzz::fail("an output without data", "");
}

struct Tensors {
  std::vector<kiln_tensor*> handles;
  std::vector<std::unique_ptr<std::vector<unsigned char>>> wrapped;  // the buffers kiln_tensor_wrap views
  ~Tensors() {
    for (kiln_tensor* t : handles) kiln_tensor_destroy(t);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string model = write_model();
  Program p(data, size);
  kiln_options* options = nullptr;
  check(kiln_options_create(&options), "kiln_options_create");
  std::unique_ptr<kiln_options, void (*)(kiln_options*)> options_owner(options, kiln_options_destroy);
  std::unique_ptr<kiln_session, void (*)(kiln_session*)> session(nullptr, kiln_session_destroy);
  Tensors tensors;
  for (int step = 0; step < 32 && !p.done(); ++step) {
    switch (p.byte() % 8) {
      case 0: {  // a setting: a table name (not those that write files or print) or any bytes
        const std::vector<kiln::SettingInfo>& table = kiln::settings_table();
        const uint8_t pick = p.byte();
        std::string name = pick < 200 ? table[pick % table.size()].name : p.text();
        if (name == "dump_dir" || name == "cache_dir" || name == "debug") break;
        const std::string value = p.text();
        check(kiln_options_set(options, name.c_str(), value.c_str()), "kiln_options_set");
        break;
      }
      case 1: {  // a load: eager, reference or a mode value kiln must refuse (compiled starts a compiler)
        const uint8_t m = p.byte();
        const kiln_mode mode = m % 3 == 0 ? KILN_MODE_EAGER : m % 3 == 1 ? KILN_MODE_REFERENCE
                                                                        : static_cast<kiln_mode>(3 + m);
        std::vector<std::string> names;
        std::vector<int64_t> sizes;
        for (size_t i = 0, n = p.byte() % 3; i < n; ++i) {
          names.push_back(p.byte() % 2 ? "batch" : p.text());
          sizes.push_back(p.integer());
        }
        std::vector<const char*> name_ptrs;
        for (const std::string& s : names) name_ptrs.push_back(s.c_str());
        const bool missing_file = p.byte() % 16 == 0;
        kiln_session* s = nullptr;
        const kiln_status status =
            kiln_session_load(missing_file ? "/nonexistent/model.onnx" : model.c_str(), mode,
                              p.byte() % 4 == 0 ? nullptr : options, name_ptrs.data(), sizes.data(), names.size(), &s);
        check(status, "kiln_session_load");
        if (status == KILN_OK) session.reset(s);
        break;
      }
      case 2:
      case 3: {  // a tensor, created (a copy or zeros) or wrapped over a buffer of the harness
        const bool wrap = p.byte() % 2;
        const uint8_t d = p.byte();
        const kiln_dtype dtype = static_cast<kiln_dtype>(d < 250 ? d % 14 : d);
        std::vector<int64_t> shape;
        for (size_t i = 0, rank = p.byte() % 5; i < rank; ++i) shape.push_back(p.integer());
        size_t count = 1;
        bool small = true;
        for (int64_t s : shape) {
          if (s < 0 || s > 64) small = false;
          else count *= static_cast<size_t>(s);
        }
        small = small && count <= 4096;
        // Zeros of any size kiln accepts are allocated: past 64 MiB that is libFuzzer's out-of-memory, not
        // a finding (sizes whose product overflows, or negative ones, kiln must refuse: those are tried).
        unsigned __int128 bytes = dtype_bytes(dtype);
        bool negative = false, overflows = false;
        for (int64_t s : shape) {
          negative = negative || s < 0;
          bytes *= static_cast<unsigned __int128>(s < 0 ? 0 : s);
          overflows = overflows || bytes > (static_cast<unsigned __int128>(1) << 63);
        }
        if (!wrap && !small && !negative && !overflows && bytes > (static_cast<unsigned __int128>(64) << 20)) break;
        // The API takes the element count on trust: the harness gives it exactly that many, or NULL.
        auto buffer = std::make_unique<std::vector<unsigned char>>(small ? count * dtype_bytes(dtype) : 0);
        for (unsigned char& b : *buffer) b = p.byte();
        kiln_tensor* t = nullptr;
        const kiln_status status =
            wrap ? kiln_tensor_wrap(dtype, shape.data(), shape.size(), small ? buffer->data() : nullptr, &t)
                 : kiln_tensor_create(dtype, shape.data(), shape.size(), small ? buffer->data() : nullptr, &t);
        check(status, wrap ? "kiln_tensor_wrap" : "kiln_tensor_create");
        if (status != KILN_OK) break;
        check_tensor(t);
        tensors.handles.push_back(t);
        if (wrap) tensors.wrapped.push_back(std::move(buffer));
        break;
      }
      case 4: {  // a run: names from the model or any bytes, tensors from the pool or NULL
        std::vector<std::string> names;
        std::vector<const kiln_tensor*> inputs;
        for (size_t i = 0, n = p.byte() % 4; i < n; ++i) {
          const uint8_t b = p.byte();
          names.push_back(b % 3 == 0 ? "x" : b % 3 == 1 ? "y" : p.text());
          const uint8_t k = p.byte();
          inputs.push_back(tensors.handles.empty() || k == 255 ? nullptr : tensors.handles[k % tensors.handles.size()]);
        }
        std::vector<const char*> name_ptrs;
        for (const std::string& s : names) name_ptrs.push_back(s.c_str());
        const size_t outputs = session ? kiln_session_output_count(session.get()) : 0;
        std::vector<kiln_tensor*> out(outputs + 1, nullptr);
        const kiln_status status =
            kiln_session_run(p.byte() % 8 == 0 ? nullptr : session.get(), name_ptrs.data(), inputs.data(),
                             names.size(), out.data());
        check(status, "kiln_session_run");
        for (kiln_tensor* t : out) {
          if (status != KILN_OK && t) kiln::fuzz::fail("a failed run set an output", "");
          if (t) check_tensor(t);
          kiln_tensor_destroy(t);
        }
        if (status == KILN_OK)
          for (size_t j = 0; j < outputs; ++j)
            if (!out[j]) kiln::fuzz::fail("an accepted run left an output unset", std::to_string(j));
        break;
      }
      case 5: {  // accessors, with the session or NULL and any index
        const kiln_session* s = p.byte() % 4 == 0 ? nullptr : session.get();
        const size_t index = static_cast<size_t>(p.integer());
        const size_t ins = kiln_session_input_count(s), outs = kiln_session_output_count(s);
        const char* in = kiln_session_input_name(s, index);
        const char* out = kiln_session_output_name(s, index);
        if ((in != nullptr) != (s && index < ins) || (out != nullptr) != (s && index < outs))
          kiln::fuzz::fail("a name for an index out of range, or none for one in range", std::to_string(index));
        break;
      }
      case 6:  // a tensor goes
        if (!tensors.handles.empty()) {
          const size_t k = p.byte() % tensors.handles.size();
          kiln_tensor_destroy(tensors.handles[k]);
          tensors.handles.erase(tensors.handles.begin() + static_cast<std::ptrdiff_t>(k));
        }
        break;
      default:  // NULL everywhere a handle goes, and any status value's name
        check(kiln_options_set(nullptr, "threads", "1"), "kiln_options_set(NULL)");
        check(kiln_tensor_create(KILN_F32, nullptr, 1, nullptr, nullptr), "kiln_tensor_create(NULL)");
        if (!kiln_status_name(static_cast<kiln_status>(p.integer()))) kiln::fuzz::fail("kiln_status_name gave NULL", "");
        if (kiln_session_input_count(nullptr) != 0 || kiln_tensor_rank(nullptr) != 0) kiln::fuzz::fail("NULL has a size", "");
        kiln_tensor_destroy(nullptr);
        break;
    }
  }
  return 0;
}
