// Activations kept blocked (nChw16c) between the CPU's convolutions (schedule/blocked_layouts.h): which
// values qualify, and a compiled net whose convolutions read and write blocked tensors, also where a
// blocked output meets a plain residual and the NaN guard finishes the epilogue outside oneDNN, against
// the fp64 reference and with the layouts off.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "common/temp_dir.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "passes/passes.h"
#include "schedule/blocked_layouts.h"

namespace kiln {
namespace {

ValueId conv(GraphBuilder& b, ValueId x, int64_t in, int64_t out, int64_t k, int64_t stride, uint64_t seed) {
  ValueId w = b.constant(random_uniform(DType::f32, {out, in, k, k}, -0.2, 0.2, seed));
  ValueId bias = b.constant(random_uniform(DType::f32, {out}, -0.2, 0.2, seed + 1));
  const int64_t pad = k / 2;
  return b.op(OpKind::Conv, {x, w, bias}, {{"pads", {pad, pad, pad, pad}}, {"strides", {stride, stride}}});
}

ValueId relu(GraphBuilder& b, ValueId x) { return b.op(OpKind::Relu, {x}); }

// x [2, 16, 9, 9] and r [2, 32, 9, 9]:
//   h1 = relu(conv3x3(x))                   16 -> 32: plain in (a graph input), blocked out
//   h2 = relu(relu(conv3x3(h1)) + h1)       blocked in, residual and out
//   h3 = relu(relu(conv3x3(h2)) + r)        blocked in and out, plain residual (a graph input)
//   h4 = conv1x1 stride 2 (h3)              32 -> 48, blocked in and out
//   h5 = relu(conv3x3 stride 2 (h3) + h4)   blocked in, residual, out
//   h6 = conv3x3(h5)                        48 -> 24: plain out (24 channels are no blocks of 16)
//   y  = GlobalAveragePool(h6), z = h5 + 1  (h5 is also read by an Add: it stays plain after all)
Graph net(bool read_h5_elsewhere) {
  GraphBuilder b("blocked");
  ValueId x = b.input("x", DType::f32, {2, 16, 9, 9});
  ValueId r = b.input("r", DType::f32, {2, 32, 9, 9});
  ValueId h1 = relu(b, conv(b, x, 16, 32, 3, 1, 10));
  ValueId h2 = relu(b, b.op(OpKind::Add, {relu(b, conv(b, h1, 32, 32, 3, 1, 20)), h1}));
  ValueId h3 = relu(b, b.op(OpKind::Add, {relu(b, conv(b, h2, 32, 32, 3, 1, 30)), r}));
  ValueId h4 = conv(b, h3, 32, 48, 1, 2, 40);
  ValueId h5 = relu(b, b.op(OpKind::Add, {conv(b, h3, 32, 48, 3, 2, 50), h4}));
  ValueId h6 = conv(b, h5, 48, 24, 3, 1, 60);
  b.output(b.op(OpKind::GlobalAveragePool, {h6}), "y");
  if (read_h5_elsewhere) b.output(b.op(OpKind::Add, {h5, b.constant(Tensor::scalar(DType::f32, 1.0f))}), "z");
  return b.build();
}

std::vector<std::string> layouts_of(const Graph& g) {
  Graph copy = g;
  infer_shapes(copy, Options{});
  std::vector<schedule::LibraryGroup> groups = schedule::find_library_groups(copy, std::vector<char>(copy.nodes.size(), 0));
  schedule::assign_blocked_layouts(copy, groups);
  std::vector<std::string> notes;
  for (const auto& grp : groups) notes.push_back(grp.label + schedule::blocked_layout_note(grp));
  return notes;
}

TEST(BlockedConvLayouts, ValuesBetweenConvGroupsOnly) {
  EXPECT_EQ(layouts_of(net(false)),
            (std::vector<std::string>{"conv+relu [nChw16c: out]", "conv+relu+add+relu [nChw16c: in, residual, out]",
                                      "conv+relu+add+relu [nChw16c: in, out]", "conv [nChw16c: in, out]",
                                      "conv+add+relu [nChw16c: in, residual, out]", "conv [nChw16c: in]"}));
  // h5 read by a node outside the groups: plain on both sides.
  EXPECT_EQ(layouts_of(net(true)),
            (std::vector<std::string>{"conv+relu [nChw16c: out]", "conv+relu+add+relu [nChw16c: in, residual, out]",
                                      "conv+relu+add+relu [nChw16c: in, out]", "conv [nChw16c: in, out]",
                                      "conv+add+relu [nChw16c: in, residual]", "conv"}));
}

Options options_for(const test_common::TempDir& dir, bool blocked, const char* algorithm) {
  Options o;
  o.cache_dir = (dir.root() / "cache").string();
  o.cpu_conv_blocked_layouts = blocked;
  o.cpu_conv_algorithm = algorithm;
  return o;
}

std::map<std::string, Tensor> inputs(double specials, uint64_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_real_distribution<double> p(0.0, 1.0);
  std::map<std::string, Tensor> in;
  for (auto [name, dims] : {std::pair<const char*, std::vector<int64_t>>{"x", {2, 16, 9, 9}}, {"r", {2, 32, 9, 9}}}) {
    Tensor t = Tensor::empty(DType::f32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double q = p(rng);
      t.data<float>()[i] = q < specials / 3 ? NAN : q < 2 * specials / 3 ? INFINITY : q < specials ? -INFINITY : u(rng);
    }
    in[name] = std::move(t);
  }
  return in;
}

// NaN where the reference has NaN, equal infinities, else within 1e-4 (relative to max(1, |want|)).
int mismatches(const Tensor& got, const Tensor& want, const std::string& what) {
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.as_double(i), w = want.as_double(i);
    const bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= 1e-4 * std::max(1.0, std::fabs(w));
    if (!ok && ++bad <= 3) ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
  }
  return bad;
}

TEST(BlockedConvLayouts, CompiledNetMatchesReference) {
  test_common::TempDir dir("kiln-blocked-layouts");
  for (bool read_h5 : {false, true}) {
    const Graph g = net(read_h5);
    Session reference = Session::from_graph(g, Mode::reference, options_for(dir, true, "direct"));
    for (const char* algorithm : {"direct", "winograd"}) {
      Session blocked = Session::from_graph(g, Mode::compiled, options_for(dir, true, algorithm));
      Session plain = Session::from_graph(g, Mode::compiled, options_for(dir, false, algorithm));
      int blocked_groups = 0;
      for (const FusionGroup& grp : blocked.graph().groups) blocked_groups += grp.label.find("nChw16c") != std::string::npos;
      // The direct f32 kernels alone keep NCHW (their own layout choice); where Winograd may run, blocked.
      const bool direct = std::string(algorithm) == "direct";
      EXPECT_EQ(blocked_groups, direct ? 0 : read_h5 ? 5 : 6) << algorithm;
      for (const FusionGroup& grp : plain.graph().groups) EXPECT_EQ(grp.label.find("nChw16c"), std::string::npos);
      // 0.02: every value special in some runs, so the guard's plain epilogue runs with a plain residual
      // (r) beside a blocked output.
      for (double specials : {0.0, 0.002, 0.02}) {
        const auto in = inputs(specials, 7);
        const auto want = reference.run(in), got = blocked.run(in), plain_got = plain.run(in);
        for (const auto& [name, w] : want) {
          const std::string what = fmt::format("{} {} specials {} read_h5 {}", name, algorithm, specials, read_h5);
          EXPECT_EQ(mismatches(got.at(name), w, what + " blocked vs reference"), 0);
          EXPECT_EQ(mismatches(plain_got.at(name), w, what + " plain vs reference"), 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln
