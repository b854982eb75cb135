// Writes seed inputs for fuzz_ir_parser: the IR text of a few builder graphs that between them use
// every construct of the text form, and of each ONNX model named on the command line (imported, shapes
// inferred and folded). Only texts that parse back are written.
//   gen_ir_seeds OUT_DIR [MODEL.onnx...]
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <omp.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/builder.h"
#include "kiln/errors.h"
#include "onnx/import.h"
#include "passes/passes.h"

using namespace kiln;

namespace {

Graph mlp() {
  GraphBuilder b("mlp");
  ValueId x = b.input("x", DType::f32, {Dim::sym("batch", 4), Dim::fixed(16)});
  ValueId w = b.constant("w", random_uniform(DType::f32, {16, 8}, -0.5, 0.5, 1));
  ValueId y = b.op(OpKind::MatMul, {x, w});
  ValueId z = b.op(OpKind::Softmax, {y}, {{"axis", -1}});
  auto parts = b.op_multi(OpKind::Split, {z, b.ints({4, 4})}, 2, {{"axis", 1}});
  b.output(parts[0], "probs");
  b.output(parts[1]);
  return b.build();
}

// Odd names, every attribute kind, special floats, omitted inputs and outputs, node names.
Graph odd_corners() {
  GraphBuilder b("corners \"quoted\"");
  ValueId x = b.input("onnx::Input 0", DType::f16, {Dim::sym("n"), Dim::sym("seq", 128), Dim::fixed(1)});
  ValueId m = b.input("mask", DType::boolean, {Dim::sym("n"), Dim::sym("seq", 128), Dim::fixed(1)});
  const double inf = std::numeric_limits<double>::infinity();
  ValueId c = b.constant("specials", Tensor::from_vector<double>(DType::f32, {5},
                                                               {std::nan(""), inf, -inf, -0.0, 1e-45}));
  ValueId i8 = b.constant("i8", Tensor::from_vector<int>(DType::i8, {3}, {-128, 0, 127}));
  ValueId u8 = b.constant("u8", Tensor::from_vector<int>(DType::u8, {2, 1}, {0, 255}));
  ValueId f64 = b.constant("f64", Tensor::from_vector<double>(DType::f64, {}, {0.1}));
  ValueId bf = b.constant("bf", Tensor::from_vector<double>(DType::bf16, {2}, {1.5, -2.25}));
  ValueId i32 = b.constant("i32", Tensor::from_vector<int>(DType::i32, {0, 3}, {}));
  ValueId xf = b.op(OpKind::Cast, {x}, {{"to", std::string("f32")}}, "cast/\tx");
  ValueId clipped = b.op(OpKind::Clip, {xf, kNoValue, b.scalar(DType::f32, 6.0)});
  ValueId sel = b.op(OpKind::Where, {m, clipped, b.scalar(DType::f32, -inf)});
  b.op_named(OpKind::Split, {sel, kNoValue}, {"first", "", "third"},
             {{"axis", -1}, {"num_outputs", 3}, {"note", "tab\there \xc3\xa9"}, {"empty", std::vector<int64_t>{}},
              {"floats", {0.5, -1e300, 3.0}}, {"strs", {"a", "", "b c"}}, {"nofloats", std::vector<double>{}},
              {"nostrs", std::vector<std::string>{}},
              {"t", Tensor::from_vector<int64_t>(DType::i64, {2}, {-9223372036854775807LL, 7})}});
  b.output(sel, "out");
  b.output(b.op(OpKind::Add, {c, b.op(OpKind::Cast, {i8}, {{"to", std::string("f32")}})}));
  b.output(b.op(OpKind::Mul, {u8, u8}));
  b.output(b.op(OpKind::Identity, {f64}));
  b.output(b.op(OpKind::Identity, {bf}));
  b.output(b.op(OpKind::Identity, {i32}));
  return b.build();
}

Graph conv_net() {
  GraphBuilder b("convnet");
  ValueId x = b.input("image", DType::f32, {Dim::sym("batch", 1), Dim::fixed(3), Dim::fixed(8), Dim::fixed(8)});
  ValueId w = b.constant("conv.weight", random_normal(DType::f32, {4, 3, 3, 3}, 0, 0.1, 2));
  ValueId y = b.op(OpKind::Conv, {x, w}, {{"pads", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"kernel_shape", {3, 3}}});
  ValueId r = b.op(OpKind::Relu, {y});
  ValueId p = b.op(OpKind::GlobalAveragePool, {r});
  ValueId f = b.op(OpKind::Flatten, {p}, {{"axis", 1}});
  ValueId s = b.op(OpKind::Reshape, {f, b.ints({-1, 2, 2})});
  ValueId t = b.op(OpKind::Transpose, {s}, {{"perm", {0, 2, 1}}});
  ValueId red = b.op(OpKind::ReduceMean, {t, b.ints({-1})}, {{"keepdims", 0}});
  b.output(b.op(OpKind::LeakyRelu, {red}, {{"alpha", 0.01}}));
  return b.build();
}

bool write_if_round_trips(const std::filesystem::path& file, const Graph& g) {
  PrintOptions all;
  all.inline_all = true;
  std::string text = print_graph(g, all);
  if (text.size() > 64 * 1024) return false;  // seeds stay small: the fuzzer mutates faster
  try {
    if (print_graph(parse_graph(text), all) != text) {
      std::fprintf(stderr, "%s: the text round trip differs (a printer/parser bug)\n", file.c_str());
      return false;
    }
  } catch (const UserError& e) {
    std::fprintf(stderr, "%s: printed text does not parse (a printer/parser bug): %s\n", file.c_str(), e.what());
    return false;
  }
  std::ofstream(file, std::ios::binary) << text;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gen_ir_seeds OUT_DIR [MODEL.onnx...]\n");
    return 2;
  }
  omp_set_num_threads(1);
  std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  int written = 0, skipped = 0;
  written += write_if_round_trips(out / "builder_mlp.ir", mlp());
  written += write_if_round_trips(out / "builder_corners.ir", odd_corners());
  written += write_if_round_trips(out / "builder_convnet.ir", conv_net());
  Options options;
  options.threads = 1;
  for (int i = 2; i < argc; ++i) {
    std::filesystem::path model = argv[i];
    std::string stem = model.parent_path().filename().string();
    if (stem.empty() || stem == ".") stem = model.stem().string();
    try {
      Graph g = import_onnx(model.string(), options);
      infer_shapes(g, options, /*fold=*/true);
      if (write_if_round_trips(out / ("onnx_" + stem + ".ir"), g)) ++written;
      else ++skipped;
    } catch (const UserError&) {
      ++skipped;  // a model kiln does not take yet
    }
  }
  std::printf("%d seeds written, %d models skipped\n", written, skipped);
  return 0;
}
