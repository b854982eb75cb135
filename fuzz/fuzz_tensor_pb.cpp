// Fuzz target: bytes -> onnx::TensorProto -> tensor_from_proto, with external data resolved in a
// scratch folder that holds one small file (data.bin), so that offsets and lengths into a real file
// are exercised too. A tensor that converts must survive tensor_to_proto -> tensor_from_proto.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <onnx/onnx.pb.h>
#include <optional>
#include <string>

#include "fuzz_util.h"
#include "onnx/external_data.h"
#include "onnx/tensor_proto.h"

namespace {

const std::filesystem::path& data_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path& d = kiln::fuzz::scratch_dir("tensor_pb");
    std::ofstream f(d / "data.bin", std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>(i * 37 + 11));
    if (!f) kiln::fuzz::fail("cannot write data.bin", d.string());
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kiln::Options options = kiln::fuzz::small_options();
  ::onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;  // not a TensorProto at all
  std::optional<kiln::Tensor> t;
  kiln::fuzz::guarded([&] {
    kiln::ExternalData external(data_dir());
    t = kiln::tensor_from_proto(proto, options, &external, "fuzz tensor");
  });
  if (!t) return 0;  // rejected with a UserError: expected

  kiln::Tensor back;
  kiln::fuzz::must_succeed("tensor_to_proto output does not convert back", [&] {
    ::onnx::TensorProto written;
    kiln::tensor_to_proto(*t, "again", written);
    back = kiln::tensor_from_proto(written, options, nullptr, "rewritten tensor");
  });
  if (back.dtype() != t->dtype() || back.shape() != t->shape() || back.nbytes() != t->nbytes() ||
      (t->nbytes() && std::memcmp(back.raw(), t->raw(), t->nbytes()) != 0))
    kiln::fuzz::fail("TensorProto round trip differs", t->shape_string() + " vs " + back.shape_string());
  return 0;
}
