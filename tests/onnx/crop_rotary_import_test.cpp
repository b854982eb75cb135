// CenterCropPad and RotaryEmbedding as the importer rewrites them (src/onnx/import_rewrites_crop_rotary.cpp),
// beyond the conformance cases: odd differences, int32 shapes, symbolic dims, 3-D inputs with a partial
// rotary dim; each against an fp64 loop of the ONNX definition written here. Then the refusals.
#include <cmath>
#include <gtest/gtest.h>
#include <random>

#include "kiln/session.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void expect_near_all(const Tensor& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.as_double(int64_t(i)), want[i], tol) << i;
}

// x of `shape` cropped / padded to `target` on `axes` (all when empty), centred.
std::vector<double> crop_pad_loop(const std::vector<float>& x, const std::vector<int64_t>& shape,
                                  std::vector<int64_t> target, const std::vector<int64_t>& axes) {
  std::vector<int64_t> out = shape;
  for (size_t k = 0; k < target.size(); ++k) {
    int64_t a = axes.empty() ? int64_t(k) : axes[k] < 0 ? axes[k] + int64_t(shape.size()) : axes[k];
    out[size_t(a)] = target[k];
  }
  std::vector<double> y(size_t(numel(out)), 0.0);
  for (int64_t i = 0; i < numel(out); ++i) {
    int64_t rest = i, src = 0, stride = 1;
    bool inside = true;
    for (size_t a = shape.size(); a-- > 0;) {
      const int64_t o = rest % out[a];
      rest /= out[a];
      const int64_t crop = std::max<int64_t>(shape[a] - out[a], 0) / 2, pad = std::max<int64_t>(out[a] - shape[a], 0) / 2;
      const int64_t s = o + crop - pad;
      inside = inside && s >= 0 && s < shape[a];
      src += s * stride, stride *= shape[a];
    }
    if (inside) y[size_t(i)] = x[size_t(src)];
  }
  return y;
}

::onnx::ModelProto crop_model(const std::vector<TestDim>& x, int64_t k, std::vector<int64_t> axes, int shape_elem = TP::INT64) {
  auto m = make_model(18);
  add_input(m, "x", x);
  add_input(m, "shape", {k}, shape_elem);
  auto* n = add_node(m, "CenterCropPad", {"x", "shape"}, {"y"}, "ccp");
  if (!axes.empty()) attr_ints(n, "axes", axes);
  add_output(m, "y");
  return m;
}

TEST(CenterCropPadImport, CropsAndPadsAroundTheCentre) {
  struct C {
    std::vector<int64_t> shape, target, axes;
    int elem = TP::INT64;
    bool symbolic = false;
  };
  const C cases[] = {
      {{5, 4, 3}, {2, 7, 3}, {}},               // crop 5 -> 2 starts at 1; pad 4 -> 7 puts 1 before, 2 after
      {{5, 4, 3}, {4, 1}, {0, 1}, TP::INT32},   // int32 shape; crop by an odd difference on both
      {{2, 6, 5}, {3, 9}, {-1, 1}},             // negative and unordered axes
      {{3, 3}, {3, 3}, {}, TP::INT64, true},    // unchanged, with symbolic dims
      {{7, 2}, {1, 6}, {}, TP::INT64, true},
  };
  uint32_t seed = 1;
  for (const C& c : cases)
    for (Mode mode : {Mode::eager, Mode::compiled, Mode::reference}) {
      std::vector<TestDim> dims;
      for (size_t a = 0; a < c.shape.size(); ++a)
        c.symbolic ? dims.push_back("d" + std::to_string(a)) : dims.push_back(c.shape[a]);
      Session s = Session::from_graph(import_model(crop_model(dims, int64_t(c.target.size()), c.axes, c.elem)), mode, Options{});
      auto x = random_normal(numel(c.shape), seed++);
      Tensor shape = Tensor::from_vector<int64_t>(c.elem == TP::INT32 ? DType::i32 : DType::i64,
                                                  {int64_t(c.target.size())}, c.target);
      Tensor y = s.run({{"x", Tensor::from_vector<float>(DType::f32, c.shape, x)}, {"shape", shape}}).at("y");
      expect_near_all(y, crop_pad_loop(x, c.shape, c.target, c.axes), 0.0);
    }
}

TEST(CenterCropPadImport, Refusals) {
  expect_user_error(crop_model({4, 4}, 2, {0, 2}), "node 'ccp' (CenterCropPad-18): axis 2 is out of range for rank 2");
  expect_user_error(crop_model({4, 4}, 2, {0, -2}), "axis -2 appears more than once");
  expect_user_error(crop_model({4, 4}, 2, {}, TP::FLOAT), "shape is f32 (expected int32 or int64)");
  auto extra = crop_model({4, 4}, 2, {});
  attr_int(extra.mutable_graph()->mutable_node(0), "mode", 1);
  expect_user_error(extra, "unknown attribute 'mode'");
}

struct Rope {
  int64_t batch = 2, seq = 3, heads = 2, head = 6, rot = 0, max_pos = 8;
  bool three_d = false, interleaved = false, positions = true, symbolic = false;
  int64_t half() const { return (rot ? rot : head) / 2; }
};

::onnx::ModelProto rope_model(const Rope& r) {
  auto m = make_model(23);
  auto d = [&](int64_t v, const char* name) { return r.symbolic ? TestDim{std::string(name)} : TestDim{v}; };
  if (r.three_d) add_input(m, "x", {d(r.batch, "b"), d(r.seq, "s"), r.heads * r.head});
  else add_input(m, "x", {d(r.batch, "b"), r.heads, d(r.seq, "s"), r.head});
  std::vector<TestDim> cache = r.positions ? std::vector<TestDim>{r.max_pos, r.half()}
                                           : std::vector<TestDim>{d(r.batch, "b"), d(r.seq, "s"), r.half()};
  add_input(m, "cos", cache), add_input(m, "sin", cache);
  std::vector<std::string> ins{"x", "cos", "sin"};
  if (r.positions) add_input(m, "pos", {d(r.batch, "b"), d(r.seq, "s")}, TP::INT64), ins.push_back("pos");
  auto* n = add_node(m, "RotaryEmbedding", ins, {"y"}, "rope");
  if (r.three_d) attr_int(n, "num_heads", r.heads);
  if (r.rot) attr_int(n, "rotary_embedding_dim", r.rot);
  if (r.interleaved) attr_int(n, "interleaved", 1);
  add_output(m, "y");
  return m;
}

TEST(RotaryEmbeddingImport, MatchesTheLoop) {
  uint32_t seed = 10;
  for (bool three_d : {false, true})
    for (bool interleaved : {false, true})
      for (bool positions : {false, true})
        for (int64_t rot : {0, 4}) {
          Rope r;
          r.three_d = three_d, r.interleaved = interleaved, r.positions = positions, r.rot = rot;
          r.symbolic = (seed % 2) == 0;
          const int64_t B = r.batch, S = r.seq, H = r.heads, D = r.head, half = r.half(), R = 2 * half;
          auto x = random_normal(B * S * H * D, seed++);
          const int64_t rows = r.positions ? r.max_pos : B * S;
          auto cos = random_normal(rows * half, seed++), sin = random_normal(rows * half, seed++);
          std::vector<int64_t> pos;
          for (int64_t i = 0; i < B * S; ++i) pos.push_back((i * 5 + 3) % r.max_pos);
          // The loop: element (b, h, s, d) of the 4-D form, or (b, s, h * D + d) of the 3-D one.
          std::vector<double> want(x.size());
          for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t s = 0; s < S; ++s) {
                auto at = [&](int64_t d) { return three_d ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d; };
                const int64_t row = r.positions ? pos[size_t(b * S + s)] : b * S + s;
                for (int64_t d = 0; d < D; ++d) want[size_t(at(d))] = x[size_t(at(d))];
                for (int64_t i = 0; i < half; ++i) {
                  const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
                  const double c = cos[size_t(row * half + i)], sn = sin[size_t(row * half + i)];
                  const double x1 = x[size_t(at(i1))], x2 = x[size_t(at(i2))];
                  want[size_t(at(i1))] = c * x1 - sn * x2, want[size_t(at(i2))] = sn * x1 + c * x2;
                }
                (void)R;
              }
          std::vector<int64_t> x_shape = three_d ? std::vector<int64_t>{B, S, H * D} : std::vector<int64_t>{B, H, S, D};
          std::vector<int64_t> c_shape = r.positions ? std::vector<int64_t>{r.max_pos, half} : std::vector<int64_t>{B, S, half};
          for (Mode mode : {Mode::eager, Mode::compiled, Mode::reference}) {
            SCOPED_TRACE(::testing::Message() << "3d " << three_d << " interleaved " << interleaved << " positions "
                                              << positions << " rot " << rot << " mode " << int(mode));
            Session sess = Session::from_graph(import_model(rope_model(r)), mode, Options{});
            std::map<std::string, Tensor> in{{"x", Tensor::from_vector<float>(DType::f32, x_shape, x)},
                                             {"cos", Tensor::from_vector<float>(DType::f32, c_shape, cos)},
                                             {"sin", Tensor::from_vector<float>(DType::f32, c_shape, sin)}};
            if (r.positions) in["pos"] = Tensor::from_vector<int64_t>(DType::i64, {B, S}, pos);
            Tensor y = sess.run(in).at("y");
            ASSERT_EQ(y.shape(), x_shape);
            expect_near_all(y, want, mode == Mode::reference ? 1e-12 : 1e-5);
          }
        }
}

TEST(RotaryEmbeddingImport, Refusals) {
  Rope r;
  auto with = [&](auto&& edit) {
    auto m = rope_model(r);
    edit(m);
    return m;
  };
  r.three_d = true;
  expect_user_error(with([](auto& m) { m.mutable_graph()->mutable_node(0)->clear_attribute(); }),
                    "node 'rope' (RotaryEmbedding-23): a 3-D input needs num_heads");
  r.three_d = false;
  r.rot = 3;
  expect_user_error(rope_model(r), "rotary_embedding_dim 3 (expected 0 or an even size)");
  r.rot = 8;
  expect_user_error(rope_model(r), "rotary_embedding_dim 8 exceeds the head size 6");
  r.rot = 0;
  expect_user_error(with([](auto& m) { attr_int(m.mutable_graph()->mutable_node(0), "interleaved", 2); }),
                    "interleaved 2 (expected 0 or 1)");
  expect_user_error(with([](auto& m) { attr_int(m.mutable_graph()->mutable_node(0), "scale", 2); }),
                    "unknown attribute 'scale'");
  expect_user_error(with([](auto& m) {
                      m.mutable_graph()->mutable_input(3)->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
                    }),
                    "position_ids is f32 (expected int64)");
  expect_user_error(with([](auto& m) {
                      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(1);
                    }),
                    "the input has rank 5 (expected 3 or 4)");
  r.positions = false;  // a [positions, half] cache without position_ids
  expect_user_error(with([](auto& m) {
                      m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()->RemoveLast();
                    }),
                    "cos_cache has rank 2 (expected 3");
}

}  // namespace
}  // namespace kiln::testing
