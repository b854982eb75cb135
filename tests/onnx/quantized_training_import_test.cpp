// The integer products (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), 16-bit quantization,
// BatchNormalization in training mode and the optimizers of ai.onnx.preview.training as the importer
// rewrites them (src/onnx/import_rewrites_quantize.cpp, _nn.cpp, _training.cpp), beyond the conformance
// cases: per-row and per-column zero points at the 8-bit extremes, padding, a per-channel scale, and
// loops of the ONNX definitions written here, in every mode; then the domain rules and the refusals.
#include <cmath>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include "kiln/session.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;
template <class T>
Tensor tensor(DType t, std::vector<int64_t> shape, const std::vector<T>& v) {
  return Tensor::from_vector<T>(t, std::move(shape), v);
}

TEST(IntegerProducts, MatMulIntegerWithPerRowAndPerColumnZeroPoints) {
  const int64_t M = 3, K = 4, N = 2;
  auto m = make_model(13);
  add_input(m, "a", {M, K}, TP::UINT8), add_input(m, "b", {K, N}, TP::INT8);
  add_input(m, "azp", {M}, TP::UINT8), add_input(m, "bzp", {N}, TP::INT8);
  add_node(m, "MatMulInteger", {"a", "b", "azp", "bzp"}, {"y"});
  add_output(m, "y");
  const std::vector<int64_t> a = {255, 0, 128, 7, 1, 2, 3, 4, 255, 255, 255, 255}, b = {-128, 127, 0, 1, -1, -128, 127, 5};
  const std::vector<int64_t> azp = {0, 255, 128}, bzp = {-128, 127};
  std::vector<int64_t> want(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        want[size_t(i * N + j)] += (a[size_t(i * K + k)] - azp[size_t(i)]) * (b[size_t(k * N + j)] - bzp[size_t(j)]);
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Session s = Session::from_graph(import_model(m), mode, Options{});
    Tensor y = s.run({{"a", tensor(DType::u8, {M, K}, a)},
                      {"b", tensor(DType::i8, {K, N}, b)},
                      {"azp", tensor(DType::u8, {M}, azp)},
                      {"bzp", tensor(DType::i8, {N}, bzp)}})
                   .at("y");
    ASSERT_EQ(y.dtype(), DType::i32);
    EXPECT_EQ(y.to_int64_vector(), want);
  }
}

// onnxruntime.quantization.quantize_dynamic's form: DynamicQuantizeLinear's zero point feeds
// MatMulInteger and ConvInteger with nothing declaring its rank (no value_info; an ORT-quantized
// model has none for it), which the importer once refused ("the input's rank must be declared").
TEST(IntegerProducts, DynamicQuantizeLinearZeroPointFeedsMatMulIntegerAndConvInteger) {
  const std::vector<float> x = {-1.0f, 0.0f, 0.3f, 1.7f, -0.45f, 2.2f};
  const std::vector<int64_t> w = {3, 250, 128, 0, 77, 200};
  const int64_t wzp = 128;
  // DynamicQuantizeLinear in f32, as ONNX defines it: round half to even, saturate to [0, 255].
  const float scale = (2.2f - -1.0f) / 255.0f;
  const float zp = std::clamp(std::nearbyint(0.0f - -1.0f / scale), 0.0f, 255.0f);
  std::vector<int64_t> q(x.size());
  for (size_t i = 0; i < x.size(); ++i) q[i] = int64_t(std::clamp(std::nearbyint(x[i] / scale) + zp, 0.0f, 255.0f));
  // x [1,1,2,3]: times w [3,2] (MatMul: [1,1,2,2]); convolved with w as [2,1,1,3] (Conv: [1,2,2,1]).
  std::vector<int64_t> want_mm(4, 0), want_conv(4, 0);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        want_mm[size_t(r * 2 + j)] += (q[size_t(r * 3 + k)] - int64_t(zp)) * (w[size_t(k * 2 + j)] - wzp);
        want_conv[size_t(j * 2 + r)] += (q[size_t(r * 3 + k)] - int64_t(zp)) * (w[size_t(j * 3 + k)] - wzp);
      }
  auto m = make_model(13);
  add_input(m, "x", {1, 1, 2, 3}), add_input(m, "w", {3, 2}, TP::UINT8), add_input(m, "w4", {2, 1, 1, 3}, TP::UINT8);
  add_input(m, "wzp", {}, TP::UINT8);
  add_node(m, "DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xzp"});
  add_node(m, "MatMulInteger", {"xq", "w", "xzp", "wzp"}, {"mm"});
  add_node(m, "ConvInteger", {"xq", "w4", "xzp", "wzp"}, {"conv"});
  add_output(m, "mm"), add_output(m, "conv");
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Session s = Session::from_graph(import_model(m), mode, Options{});
    auto out = s.run({{"x", tensor(DType::f32, {1, 1, 2, 3}, x)},
                      {"w", tensor(DType::u8, {3, 2}, w)},
                      {"w4", tensor(DType::u8, {2, 1, 1, 3}, w)},
                      {"wzp", Tensor::scalar(DType::u8, uint8_t(wzp))}});
    EXPECT_EQ(out.at("mm").to_int64_vector(), want_mm);
    EXPECT_EQ(out.at("conv").to_int64_vector(), want_conv);
  }
}

TEST(IntegerProducts, ConvIntegerPadsWithTheZeroPointAndQLinearConvScalesPerChannel) {
  // x [1,1,3,3] u8, w [2,1,2,2] u8 with a zero point per output channel, pads 1.
  const std::vector<int64_t> x = {0, 10, 255, 3, 4, 5, 200, 7, 8}, w = {1, 2, 3, 255, 0, 9, 10, 11};
  const int64_t xzp = 100;
  const std::vector<int64_t> wzp = {1, 9};
  const int64_t OH = 4, OW = 4;
  std::vector<int64_t> want(size_t(2 * OH * OW));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t acc = 0;
        for (int64_t kh = 0; kh < 2; ++kh)
          for (int64_t kw = 0; kw < 2; ++kw) {
            const int64_t ih = oh + kh - 1, iw = ow + kw - 1;
            const int64_t xv = ih < 0 || ih > 2 || iw < 0 || iw > 2 ? xzp : x[size_t(ih * 3 + iw)];
            acc += (xv - xzp) * (w[size_t(c * 4 + kh * 2 + kw)] - wzp[size_t(c)]);
          }
        want[size_t((c * OH + oh) * OW + ow)] = acc;
      }
  auto m = make_model(13);
  add_input(m, "x", {1, 1, 3, 3}, TP::UINT8), add_input(m, "w", {2, 1, 2, 2}, TP::UINT8);
  add_input(m, "xzp", {}, TP::UINT8), add_input(m, "wzp", {2}, TP::UINT8);
  attr_ints(add_node(m, "ConvInteger", {"x", "w", "xzp", "wzp"}, {"y"}), "pads", {1, 1, 1, 1});
  add_output(m, "y");
  // QLinearConv of the same operands: y = saturate(round(acc * x_scale * w_scale[c] / y_scale) + y_zp).
  add_input(m, "xs", {}), add_input(m, "ws", {2}), add_input(m, "ys", {}), add_input(m, "yzp", {}, TP::INT8);
  attr_ints(add_node(m, "QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp"}, {"q"}), "pads", {1, 1, 1, 1});
  add_output(m, "q");
  const float xs = 0.5f, ys = 4.0f;
  const std::vector<float> ws = {0.25f, 0.125f};
  std::vector<int64_t> want_q(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const double real = double(want[i]) * xs * ws[i / size_t(OH * OW)] / ys;
    want_q[i] = int64_t(std::clamp(std::nearbyint(real) - 3, -128.0, 127.0));
  }
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Session s = Session::from_graph(import_model(m), mode, Options{});
    auto out = s.run({{"x", tensor(DType::u8, {1, 1, 3, 3}, x)},
                      {"w", tensor(DType::u8, {2, 1, 2, 2}, w)},
                      {"xzp", Tensor::scalar(DType::u8, uint8_t(xzp))},
                      {"wzp", tensor(DType::u8, {2}, wzp)},
                      {"xs", Tensor::scalar(DType::f32, xs)},
                      {"ws", tensor(DType::f32, {2}, ws)},
                      {"ys", Tensor::scalar(DType::f32, ys)},
                      {"yzp", Tensor::scalar(DType::i8, int8_t(-3))}});
    EXPECT_EQ(out.at("y").to_int64_vector(), want);
    EXPECT_EQ(out.at("q").dtype(), DType::i8);
    EXPECT_EQ(out.at("q").to_int64_vector(), want_q);
  }
}

TEST(IntegerProducts, SixteenBitQuantizeSaturatesAndFloatOperandsAreRefused) {
  auto m = make_model(21);
  add_input(m, "x", {4}), add_input(m, "s", {}), add_input(m, "zp", {}, TP::UINT16);
  add_node(m, "QuantizeLinear", {"x", "s", "zp"}, {"q"});
  add_node(m, "DequantizeLinear", {"q", "s", "zp"}, {"d"});
  add_output(m, "q"), add_output(m, "d");
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Session s = Session::from_graph(import_model(m), mode, Options{});
    auto out = s.run({{"x", tensor(DType::f32, {4}, std::vector<float>{-1e6f, 2.5f, 3.5f, 1e9f})},
                      {"s", Tensor::scalar(DType::f32, 1.0f)},
                      {"zp", Tensor::scalar(DType::u16, uint16_t(1000))}});
    EXPECT_EQ(out.at("q").dtype(), DType::u16);
    // Round half to even, + 1000, clamped to [0, 65535].
    EXPECT_EQ(out.at("q").to_int64_vector(), (std::vector<int64_t>{0, 1002, 1004, 65535}));
    EXPECT_EQ(out.at("d").as_double(3), 64535.0);
  }
  auto f = make_model(13);
  add_input(f, "a", {2, 2}), add_input(f, "b", {2, 2});
  add_node(f, "MatMulInteger", {"a", "b"}, {"y"}, "mmi");
  add_output(f, "y");
  expect_user_error(f, "node 'mmi' (MatMulInteger-10): a A of f32 (u8 and i8 are supported)");
}

TEST(BatchNormTraining, BatchStatisticsAndRunningOutputs) {
  const int64_t N = 2, C = 3, L = 2;
  auto m = make_model(15);
  add_input(m, "x", {N, C, L});
  for (const char* p : {"scale", "bias", "mean", "var"}) add_input(m, p, {C});
  auto* bn = add_node(m, "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "rm", "rv"});
  attr_int(bn, "training_mode", 1), attr_float(bn, "momentum", 0.75f), attr_float(bn, "epsilon", 1e-3f);
  add_output(m, "y"), add_output(m, "rm"), add_output(m, "rv");
  const std::vector<float> x = random_normal(N * C * L, 5), scale = {1, 2, -1}, bias = {0, 1, 2}, mean = {3, 4, 5},
                           var = {1, 2, 3};
  std::vector<double> want_y(x.size()), want_rm(static_cast<size_t>(C)), want_rv(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    double mu = 0, s2 = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t l = 0; l < L; ++l) mu += x[size_t((n * C + c) * L + l)];
    mu /= double(N * L);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t l = 0; l < L; ++l) s2 += std::pow(x[size_t((n * C + c) * L + l)] - mu, 2);
    s2 /= double(N * L);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t l = 0; l < L; ++l) {
        const size_t i = size_t((n * C + c) * L + l);
        want_y[i] = scale[size_t(c)] * (x[i] - mu) / std::sqrt(s2 + double(1e-3f)) + bias[size_t(c)];
      }
    want_rm[size_t(c)] = mean[size_t(c)] * 0.75 + mu * 0.25;
    want_rv[size_t(c)] = var[size_t(c)] * 0.75 + s2 * 0.25;
  }
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Session s = Session::from_graph(import_model(m), mode, Options{});
    auto out = s.run({{"x", tensor(DType::f32, {N, C, L}, x)},
                      {"scale", tensor(DType::f32, {C}, scale)},
                      {"bias", tensor(DType::f32, {C}, bias)},
                      {"mean", tensor(DType::f32, {C}, mean)},
                      {"var", tensor(DType::f32, {C}, var)}});
    for (auto [name, want] : {std::pair{"y", &want_y}, {"rm", &want_rm}, {"rv", &want_rv}}) {
      const Tensor& got = out.at(name);
      ASSERT_EQ(got.numel(), int64_t(want->size())) << name;
      for (size_t i = 0; i < want->size(); ++i) EXPECT_NEAR(got.as_double(int64_t(i)), (*want)[i], 1e-5) << name << i;
    }
  }
}

::onnx::ModelProto training_model(const std::string& op, int64_t domain_version) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto* imp = m.add_opset_import();
  imp->set_domain("ai.onnx.preview.training");
  imp->set_version(domain_version);
  m.mutable_graph()->set_name("train");
  add_input(m, "R", {}), add_input(m, "T", {}, TP::INT64);
  for (const char* p : {"X", "G", "V"}) add_input(m, p, {2});
  auto* n = add_node(m, op, {"R", "T", "X", "G", "V"}, {"X_new", "V_new"}, "step");
  n->set_domain("ai.onnx.preview.training");
  add_output(m, "X_new"), add_output(m, "V_new");
  return m;
}

TEST(TrainingOperators, MomentumTakesBetaOnlyAfterTheFirstStepAndNesterovLooksAhead) {
  const std::vector<float> x = {1, -2}, g = {0.5f, 3}, v = {0.25f, -1};
  for (const char* mode_attr : {"standard", "nesterov"})
    for (int64_t t : {0, 5}) {
      auto m = training_model("Momentum", 1);
      auto* n = m.mutable_graph()->mutable_node(0);
      attr_float(n, "alpha", 0.9f), attr_float(n, "beta", 0.5f), attr_float(n, "norm_coefficient", 0.1f);
      auto* a = n->add_attribute();
      a->set_name("mode"), a->set_type(::onnx::AttributeProto::STRING), a->set_s(mode_attr);
      for (Mode mode : kModes) {
        SCOPED_TRACE(fmt::format("{} T={} {}", mode_attr, t, mode_name(mode)));
        Session s = Session::from_graph(import_model(m), mode, Options{});
        auto out = s.run({{"R", Tensor::scalar(DType::f32, 0.2f)},
                          {"T", Tensor::scalar(DType::i64, t)},
                          {"X", tensor(DType::f32, {2}, x)},
                          {"G", tensor(DType::f32, {2}, g)},
                          {"V", tensor(DType::f32, {2}, v)}});
        for (size_t i = 0; i < 2; ++i) {
          const double greg = 0.1 * x[i] + g[i], beta = t > 0 ? 0.5 : 1.0;
          const double v_new = 0.9 * v[i] + beta * greg;
          const double step = std::string(mode_attr) == "standard" ? v_new : greg + 0.9 * v_new;
          EXPECT_NEAR(out.at("V_new").as_double(int64_t(i)), v_new, 1e-6);
          EXPECT_NEAR(out.at("X_new").as_double(int64_t(i)), x[i] - 0.2 * step, 1e-6);
        }
      }
    }
}

TEST(TrainingOperators, DomainRulesAndRefusals) {
  // Momentum's attributes are required; an unknown mode is the model's error.
  auto bare = training_model("Momentum", 1);
  expect_user_error(bare, "attribute 'alpha' is required");
  // An operator of the domain that kiln does not read, and a domain the model does not import.
  auto gradient = training_model("Gradient", 1);
  gradient.mutable_graph()->mutable_node(0)->clear_attribute();
  expect_user_error(gradient, "unsupported operator ai.onnx.preview.training::Gradient");
  auto unimported = make_model(13);
  add_input(unimported, "R", {}), add_input(unimported, "T", {}, TP::INT64);
  for (const char* p : {"X", "G", "H"}) add_input(unimported, p, {2});
  add_node(unimported, "Adagrad", {"R", "T", "X", "G", "H"}, {"X_new", "H_new"}, "ada")
      ->set_domain("ai.onnx.preview.training");
  add_output(unimported, "X_new");
  expect_user_error(unimported, "node 'ada': the domain of ai.onnx.preview.training::Adagrad is not in the model's opset imports");
  // A default-domain node in a model that imports only the training domain.
  auto mixed = training_model("Adagrad", 1);
  add_node(mixed, "Relu", {"X_new"}, {"r"});
  expect_user_error(mixed, "node 'Relu_1' (Relu): the model imports no opset of the default ONNX domain");
  // A wrong count of tensors.
  auto odd = training_model("Adagrad", 1);
  odd.mutable_graph()->mutable_node(0)->add_input("V");
  expect_user_error(odd, "needs R, T and 3 groups of tensors, it has 6 inputs");
}

}  // namespace
}  // namespace kiln::testing
