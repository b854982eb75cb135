// The Python module `kiln` (pybind11) over libkiln.so: Session(path, ...) and run(feeds) with numpy
// arrays in and out. C-contiguous inputs of a kiln dtype are read in place (no copy); outputs are numpy
// arrays over kiln's buffers (no copy either). kiln's errors arrive as kiln.UserError,
// kiln.UnsupportedError (a UserError) and kiln.InternalError.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/errors.h"
#include "kiln/session.h"
#include "kiln/tensor.h"

namespace py = pybind11;

namespace {

// numpy has no bfloat16: such outputs come back widened to float32 (exact), as the CLI writes them.
kiln::DType dtype_of(const py::dtype& d) {
  // '=' native, '|' not applicable (one byte): anything else is the other byte order.
  const char order = d.attr("byteorder").cast<std::string>().at(0);
  if (order != '=' && order != '|')
    throw kiln::UserError("numpy arrays in non-native byte order are not read (use arr.astype(arr.dtype.newbyteorder('=')))");
  const char kind = d.kind();
  const size_t size = static_cast<size_t>(d.itemsize());
  if (kind == 'f' && size == 4) return kiln::DType::f32;
  if (kind == 'f' && size == 8) return kiln::DType::f64;
  if (kind == 'f' && size == 2) return kiln::DType::f16;
  if (kind == 'i' && size == 8) return kiln::DType::i64;
  if (kind == 'i' && size == 4) return kiln::DType::i32;
  if (kind == 'i' && size == 1) return kiln::DType::i8;
  if (kind == 'u' && size == 1) return kiln::DType::u8;
  if (kind == 'i' && size == 2) return kiln::DType::i16;
  if (kind == 'u' && size == 2) return kiln::DType::u16;
  if (kind == 'u' && size == 4) return kiln::DType::u32;
  if (kind == 'u' && size == 8) return kiln::DType::u64;
  if (kind == 'b' && size == 1) return kiln::DType::boolean;
  throw kiln::UserError("numpy dtype " + py::str(static_cast<const py::handle&>(d)).cast<std::string>() +
                        " has no kiln type (float16/32/64, int8/16/32/64, uint8/16/32/64, bool)");
}

py::dtype numpy_dtype(kiln::DType t) {
  switch (t) {
    case kiln::DType::f32: return py::dtype::of<float>();
    case kiln::DType::f64: return py::dtype::of<double>();
    case kiln::DType::f16: return py::dtype("float16");
    case kiln::DType::i64: return py::dtype::of<int64_t>();
    case kiln::DType::i32: return py::dtype::of<int32_t>();
    case kiln::DType::i8: return py::dtype::of<int8_t>();
    case kiln::DType::u8: return py::dtype::of<uint8_t>();
    case kiln::DType::i16: return py::dtype::of<int16_t>();
    case kiln::DType::u16: return py::dtype::of<uint16_t>();
    case kiln::DType::u32: return py::dtype::of<uint32_t>();
    case kiln::DType::u64: return py::dtype::of<uint64_t>();
    case kiln::DType::boolean: return py::dtype::of<bool>();
    case kiln::DType::bf16: break;
  }
  throw kiln::InternalError("python: no numpy dtype for bf16 (it is widened first)");
}

// A numpy array over the tensor's buffer: the capsule keeps a share of it alive.
py::array to_numpy(kiln::Tensor t) {
  if (t.dtype() == kiln::DType::bf16) {
    kiln::Tensor wide = kiln::Tensor::empty(kiln::DType::f32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) wide.data<float>()[i] = kiln::bf16_to_float(t.data<uint16_t>()[i]);
    t = wide;
  }
  auto* owned = new kiln::Tensor(std::move(t));
  py::capsule keep(owned, [](void* p) { delete static_cast<kiln::Tensor*>(p); });
  return py::array(numpy_dtype(owned->dtype()), owned->shape(), {}, owned->raw(), keep);
}

py::list describe(const std::vector<kiln::TensorInfo>& infos) {
  py::list out;
  for (const kiln::TensorInfo& i : infos)
    out.append(py::dict(py::arg("name") = i.name, py::arg("dtype") = std::string(kiln::dtype_name(i.dtype)),
                        py::arg("dims") = i.dims));
  return out;
}

class PySession {
 public:
  PySession(const std::string& path, const std::string& mode, std::optional<std::string> device,
            std::optional<std::string> precision, const std::map<std::string, int64_t>& dims,
            const std::map<std::string, std::string>& settings)
      : session_(load(path, mode, device, precision, dims, settings)) {}

  // feeds: name -> numpy array (or anything numpy can make one from).
  py::dict run(const py::dict& feeds) const {
    std::vector<py::array> held;  // the arrays whose buffers the inputs borrow, alive through the run
    std::map<std::string, kiln::Tensor> inputs;
    for (auto item : feeds) {
      const std::string name = py::str(item.first);
      py::array a = py::array::ensure(item.second, py::array::c_style);
      if (!a) throw kiln::UserError("input '" + name + "': not convertible to a numpy array");
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      // kiln never writes to its inputs: read-only arrays (np.broadcast_to, np.load(mmap_mode='r')) are fine.
      inputs[name] = kiln::Tensor::wrap(dtype_of(a.dtype()), shape, nullptr, const_cast<void*>(a.data()));
      held.push_back(std::move(a));
    }
    std::map<std::string, kiln::Tensor> outputs;
    {
      py::gil_scoped_release unlocked;  // other Python threads run meanwhile (runs of one session may overlap)
      outputs = session_.to_host(session_.run(inputs));
    }
    py::dict result;
    for (auto& [name, t] : outputs) result[py::str(name)] = to_numpy(std::move(t));
    return result;
  }

  py::list inputs() const { return describe(session_.inputs()); }
  py::list outputs() const { return describe(session_.outputs()); }
  py::dict stats() const {
    const kiln::RunStats s = session_.stats();
    return py::dict(py::arg("ops") = s.ops, py::arg("kernels") = s.kernels, py::arg("fused_kernels") = s.fused_kernels,
                    py::arg("library_kernels") = s.library_kernels, py::arg("buffers") = s.buffers,
                    py::arg("arena_bytes") = s.arena_bytes);
  }

 private:
  static kiln::Session load(const std::string& path, const std::string& mode, std::optional<std::string> device,
                            std::optional<std::string> precision, const std::map<std::string, int64_t>& dims,
                            const std::map<std::string, std::string>& settings) {
    kiln::Options options = kiln::Options::from_environment();
    for (const auto& [name, value] : settings) options.set(name, value);
    if (device) options.set("device", *device);
    if (precision) options.set("precision", *precision);
    const std::optional<kiln::Mode> m = kiln::mode_from_name(mode);
    if (!m) throw kiln::UserError("mode must be compiled, eager or reference, got '" + mode + "'");
    py::gil_scoped_release unlocked;  // preparing compiles and tunes: seconds
    return kiln::Session::load_file(path, *m, options, dims);
  }

  kiln::Session session_;
};

}  // namespace

PYBIND11_MODULE(kiln, m) {
  m.doc() = "kiln: a compiler for machine-learning models (docs/LIBRARY.md)";
  m.attr("__version__") = KILN_VERSION;
  auto user_error = py::register_exception<kiln::UserError>(m, "UserError", PyExc_ValueError);
  py::register_exception<kiln::UnsupportedError>(m, "UnsupportedError", user_error.ptr());
  py::register_exception<kiln::InternalError>(m, "InternalError", PyExc_RuntimeError);

  m.def("settings", [] {
    py::list out;
    for (const kiln::SettingInfo& s : kiln::settings_table())
      out.append(py::dict(py::arg("name") = s.name, py::arg("env") = s.env, py::arg("default") = s.default_value,
                          py::arg("accepted") = s.accepted, py::arg("help") = s.help));
    return out;
  }, "every setting: name, environment variable, default, accepted values, help");

  py::class_<PySession>(m, "Session", "a model loaded and prepared once, run many times")
      .def(py::init<const std::string&, const std::string&, std::optional<std::string>, std::optional<std::string>,
                    const std::map<std::string, int64_t>&, const std::map<std::string, std::string>&>(),
           py::arg("path"), py::arg("mode") = "compiled", py::arg("device") = py::none(),
           py::arg("precision") = py::none(), py::arg("dims") = std::map<std::string, int64_t>{},
           py::arg("settings") = std::map<std::string, std::string>{},
           "loads an ONNX file or a saved model (kiln compile -o); dims sizes its symbolic input dimensions, settings as `kiln settings` lists")
      .def("run", &PySession::run, py::arg("feeds"), "runs on {name: array}; returns {name: array}")
      .def_property_readonly("inputs", &PySession::inputs)
      .def_property_readonly("outputs", &PySession::outputs)
      .def_property_readonly("stats", &PySession::stats);
}
