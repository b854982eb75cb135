// The C API (include/kiln/kiln.h) over Session, Options and Tensor: each entry point checks its
// pointers, turns kiln's exceptions into a status and keeps the message for kiln_last_error.
#include "kiln/kiln.h"

#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/errors.h"
#include "kiln/session.h"
#include "kiln/tensor.h"

struct kiln_options {
  kiln::Options options;
};
struct kiln_session {
  kiln::Session session;
  std::vector<std::string> input_names, output_names;
};
struct kiln_tensor {
  kiln::Tensor tensor;
};

namespace {

// The ABI's numbers are kiln's own; a change to either enum must show here.
static_assert(KILN_F32 == static_cast<int>(kiln::DType::f32) && KILN_F16 == static_cast<int>(kiln::DType::f16) &&
              KILN_BF16 == static_cast<int>(kiln::DType::bf16) && KILN_F64 == static_cast<int>(kiln::DType::f64) &&
              KILN_I64 == static_cast<int>(kiln::DType::i64) && KILN_I32 == static_cast<int>(kiln::DType::i32) &&
              KILN_I8 == static_cast<int>(kiln::DType::i8) && KILN_U8 == static_cast<int>(kiln::DType::u8) &&
              KILN_BOOL == static_cast<int>(kiln::DType::boolean) && KILN_I16 == static_cast<int>(kiln::DType::i16) &&
              KILN_U16 == static_cast<int>(kiln::DType::u16) && KILN_U32 == static_cast<int>(kiln::DType::u32) &&
              KILN_U64 == static_cast<int>(kiln::DType::u64) && kiln::kNumDTypes == 13);

thread_local std::string last_error;

// A bad argument found inside `guarded` (KILN_ERROR_INVALID_ARGUMENT).
struct InvalidArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Keeps `message` for kiln_last_error; never throws (a message that cannot be stored is replaced).
kiln_status fail(kiln_status status, const char* message) noexcept {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();
  }
  return status;
}

// Runs `body`, mapping what it throws to a status (the message kept for kiln_last_error).
template <class Body>
kiln_status guarded(Body&& body) noexcept {
  try {
    body();
    return KILN_OK;
  } catch (const InvalidArgument& e) {
    return fail(KILN_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const kiln::UnsupportedError& e) {
    return fail(KILN_ERROR_UNSUPPORTED, e.what());
  } catch (const kiln::UserError& e) {
    return fail(KILN_ERROR_USER, e.what());
  } catch (const kiln::InternalError& e) {
    return fail(KILN_ERROR_INTERNAL, e.what());
  } catch (const std::bad_alloc&) {
    return fail(KILN_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(KILN_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(KILN_ERROR_INTERNAL, "unexpected exception");
  }
}

kiln_status invalid(const char* what) noexcept { return fail(KILN_ERROR_INVALID_ARGUMENT, what); }

// The dtype and shape of a new tensor, checked (inside `guarded`: a huge rank throws bad_alloc).
struct Layout {
  kiln::DType dtype;
  std::vector<int64_t> shape;
};
Layout checked_layout(kiln_dtype dtype, const int64_t* shape, size_t rank) {
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) >= kiln::kNumDTypes)
    throw InvalidArgument("kiln_tensor: unknown dtype");
  if (rank > 0 && !shape) throw InvalidArgument("kiln_tensor: shape is NULL");
  Layout l{static_cast<kiln::DType>(dtype), std::vector<int64_t>(shape, shape + rank)};
  for (int64_t d : l.shape)
    if (d < 0) throw kiln::UserError("kiln_tensor: a negative dimension");
  return l;
}

}  // namespace

extern "C" {

const char* kiln_version(void) { return KILN_VERSION; }
int kiln_abi_version(void) { return KILN_ABI_VERSION; }
const char* kiln_last_error(void) { return last_error.c_str(); }

const char* kiln_status_name(kiln_status status) {
  switch (status) {
    case KILN_OK: return "ok";
    case KILN_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case KILN_ERROR_USER: return "user error";
    case KILN_ERROR_UNSUPPORTED: return "unsupported";
    case KILN_ERROR_OUT_OF_MEMORY: return "out of memory";
    case KILN_ERROR_INTERNAL: return "internal error";
    case KILN_STATUS_MAX_ENUM: break;  // not a status
  }
  return "unknown status";
}

kiln_status kiln_options_create(kiln_options** out) {
  if (!out) return invalid("kiln_options_create: out is NULL");
  *out = nullptr;
  return guarded([&] { *out = new kiln_options{kiln::Options::from_environment()}; });
}

kiln_status kiln_options_set(kiln_options* options, const char* name, const char* value) {
  if (!options || !name || !value) return invalid("kiln_options_set: a NULL argument");
  return guarded([&] { options->options.set(name, value); });
}

void kiln_options_destroy(kiln_options* options) { delete options; }

kiln_status kiln_session_load(const char* path, kiln_mode mode, const kiln_options* options,
                              const char* const* dim_names, const int64_t* dim_sizes, size_t num_dims,
                              kiln_session** out) {
  if (!out) return invalid("kiln_session_load: out is NULL");
  *out = nullptr;
  if (!path) return invalid("kiln_session_load: path is NULL");
  if (num_dims > 0 && (!dim_names || !dim_sizes)) return invalid("kiln_session_load: dim_names or dim_sizes is NULL");
  kiln::Mode m;
  switch (mode) {
    case KILN_MODE_COMPILED: m = kiln::Mode::compiled; break;
    case KILN_MODE_EAGER: m = kiln::Mode::eager; break;
    case KILN_MODE_REFERENCE: m = kiln::Mode::reference; break;
    default: return invalid("kiln_session_load: unknown mode");
  }
  return guarded([&] {
    std::map<std::string, int64_t> dims;
    for (size_t i = 0; i < num_dims; ++i) {
      if (!dim_names[i]) throw kiln::UserError("kiln_session_load: dim_names[" + std::to_string(i) + "] is NULL");
      if (!dims.emplace(dim_names[i], dim_sizes[i]).second)
        throw kiln::UserError(std::string("kiln_session_load: dimension '") + dim_names[i] + "' given twice");
    }
    const kiln::Options o = options ? options->options : kiln::Options::from_environment();
    auto s = std::make_unique<kiln_session>(kiln_session{kiln::Session::load_file(path, m, o, dims), {}, {}});
    for (const kiln::TensorInfo& i : s->session.inputs()) s->input_names.push_back(i.name);
    for (const kiln::TensorInfo& i : s->session.outputs()) s->output_names.push_back(i.name);
    *out = s.release();
  });
}

void kiln_session_destroy(kiln_session* session) { delete session; }

size_t kiln_session_input_count(const kiln_session* session) { return session ? session->input_names.size() : 0; }
size_t kiln_session_output_count(const kiln_session* session) { return session ? session->output_names.size() : 0; }
const char* kiln_session_input_name(const kiln_session* session, size_t index) {
  return session && index < session->input_names.size() ? session->input_names[index].c_str() : nullptr;
}
const char* kiln_session_output_name(const kiln_session* session, size_t index) {
  return session && index < session->output_names.size() ? session->output_names[index].c_str() : nullptr;
}

kiln_status kiln_session_run(const kiln_session* session, const char* const* input_names,
                             const kiln_tensor* const* inputs, size_t num_inputs, kiln_tensor** outputs) {
  if (!session || !outputs) return invalid("kiln_session_run: session or outputs is NULL");
  if (num_inputs > 0 && (!input_names || !inputs)) return invalid("kiln_session_run: input_names or inputs is NULL");
  for (size_t i = 0; i < num_inputs; ++i)
    if (!input_names[i] || !inputs[i]) return invalid("kiln_session_run: a NULL input name or tensor");
  return guarded([&] {
    std::map<std::string, kiln::Tensor> feeds;
    for (size_t i = 0; i < num_inputs; ++i)
      if (!feeds.emplace(input_names[i], inputs[i]->tensor).second)
        throw kiln::UserError(std::string("kiln_session_run: input '") + input_names[i] + "' given twice");
    std::map<std::string, kiln::Tensor> results = session->session.to_host(session->session.run(feeds));
    // Every output made before any is handed out: a failure leaves `outputs` untouched.
    std::vector<std::unique_ptr<kiln_tensor>> made;
    for (const std::string& name : session->output_names)
      made.push_back(std::make_unique<kiln_tensor>(kiln_tensor{results.at(name)}));
    for (size_t j = 0; j < made.size(); ++j) outputs[j] = made[j].release();
  });
}

kiln_status kiln_tensor_create(kiln_dtype dtype, const int64_t* shape, size_t rank, const void* data,
                               kiln_tensor** out) {
  if (!out) return invalid("kiln_tensor_create: out is NULL");
  *out = nullptr;
  return guarded([&] {
    Layout l = checked_layout(dtype, shape, rank);
    kiln::Tensor t = kiln::Tensor::empty(l.dtype, std::move(l.shape));
    if (data && t.nbytes() > 0) std::memcpy(t.raw(), data, t.nbytes());
    *out = new kiln_tensor{std::move(t)};
  });
}

kiln_status kiln_tensor_wrap(kiln_dtype dtype, const int64_t* shape, size_t rank, void* data, kiln_tensor** out) {
  if (!out) return invalid("kiln_tensor_wrap: out is NULL");
  *out = nullptr;
  return guarded([&] {
    Layout l = checked_layout(dtype, shape, rank);
    // The caller keeps the buffer alive: the owner handle holds nothing.
    kiln::Tensor t = kiln::Tensor::wrap(l.dtype, std::move(l.shape), nullptr, data);
    if (!data && t.numel() > 0) throw kiln::UserError("kiln_tensor_wrap: data is NULL");
    *out = new kiln_tensor{std::move(t)};
  });
}

void kiln_tensor_destroy(kiln_tensor* tensor) { delete tensor; }
kiln_dtype kiln_tensor_dtype(const kiln_tensor* tensor) {
  return tensor ? static_cast<kiln_dtype>(tensor->tensor.dtype()) : KILN_F32;
}
size_t kiln_tensor_rank(const kiln_tensor* tensor) { return tensor ? tensor->tensor.shape().size() : 0; }
const int64_t* kiln_tensor_shape(const kiln_tensor* tensor) { return tensor ? tensor->tensor.shape().data() : nullptr; }
const void* kiln_tensor_data(const kiln_tensor* tensor) { return tensor ? tensor->tensor.raw() : nullptr; }
size_t kiln_tensor_nbytes(const kiln_tensor* tensor) { return tensor ? tensor->tensor.nbytes() : 0; }

}  // extern "C"
