// A program built against an installed kiln, through find_package(kiln) or pkg-config: runs MODEL
// compiled on the inputs in IN_DIR (NAME.npy each) and writes each output as OUT_DIR/NAME.npy.
// usage: consumer MODEL IN_DIR OUT_DIR [SYMBOL=SIZE]...
#include <kiln/errors.h>
#include <kiln/session.h>
#include <kiln/tensor_io.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL IN_DIR OUT_DIR [SYMBOL=SIZE]...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path in_dir = argv[2], out_dir = argv[3];
  try {
    std::map<std::string, int64_t> dims;
    for (int i = 4; i < argc; ++i) {
      const std::string item = argv[i];
      const size_t eq = item.find('=');
      dims[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    }
    const kiln::Options options = kiln::Options::from_environment();
    const kiln::Session session = kiln::Session::load_onnx(argv[1], kiln::Mode::compiled, options, dims);
    std::map<std::string, kiln::Tensor> inputs;
    for (const kiln::TensorInfo& input : session.inputs())
      inputs[input.name] = kiln::read_npy((in_dir / (input.name + ".npy")).string());
    std::filesystem::create_directories(out_dir);
    for (const auto& [name, tensor] : session.run(inputs)) {
      kiln::write_npy((out_dir / (name + ".npy")).string(), tensor);
      std::printf("output %s: %s%s\n", name.c_str(), std::string(kiln::dtype_name(tensor.dtype())).c_str(),
                  tensor.shape_string().c_str());
    }
    return 0;
  } catch (const kiln::UserError& e) {
    std::fprintf(stderr, "consumer: error: %s\n", e.what());
    return 1;
  }
}
