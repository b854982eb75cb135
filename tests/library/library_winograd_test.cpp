// Conv groups on oneDNN's Winograd kernels (cpu_conv_algorithm): against the fp64 reference and the
// eager nodes at both of oneDNN's tile sizes, odd sizes and one-pixel images; inputs with NaN, infinities
// and huge finite values, which must take the direct kernel; and the autotuner's choice between the two.
#include "autotune/autotuner.h"
#include "backend/cpu/library_kernel_detail.h"
#include "graphs.h"
#include "library_test_util.h"

namespace kiln::library_test {
namespace {

Options winograd_options() {
  Options o;
  o.cpu_conv_algorithm = "winograd";
  return o;
}

std::map<ValueId, Tensor> inputs_of(const Graph& g, const LibraryGroup& grp, std::mt19937& rng, double specials) {
  std::map<ValueId, Tensor> r;
  for (ValueId v : grp.inputs)
    if (!g.value(v).constant) r[v] = random_f32(static_dims(g.value(v).type.shape), rng, specials);
  return r;
}

bool winograd_ready(const Graph& g, const LibraryGroup& grp) {
  bool ready = false;
  backend::cpu::library_detail::make_conv_kernel(g, grp, onednn::Operands::f32, onednn::ConvAlgorithm::winograd,
                                                 &ready);
  return ready;
}

// ResNet's basic block (conv + BatchNormalization + relu, then conv + BatchNormalization + residual + relu)
// at sizes that take oneDNN's F(2x2,3x3) and F(4x4,3x3) kernels, images that do not divide into tiles,
// and images of one pixel.
TEST(LibraryWinograd, BasicBlocksMatchReference) {
  struct Size {
    int64_t n, c, hw;
  };
  for (Size s : {Size{2, 8, 7}, Size{1, 16, 10}, Size{1, 64, 13}, Size{1, 100, 9}, Size{2, 128, 6}, Size{1, 32, 1}}) {
    Graph g = basic_block(s.n, s.c, s.hw, 5);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 2u);
    std::mt19937 rng(31);
    for (const auto& grp : groups) {
      const std::string what = fmt::format("{} n={} c={} hw={}", grp.label, s.n, s.c, s.hw);
      EXPECT_TRUE(winograd_ready(g, grp)) << what << ": oneDNN has no Winograd kernel here";
      for (double specials : {0.0, 0.003})
        check_group(g, grp, inputs_of(g, grp, rng, specials), 1e-4, 1e-4,
                    what + (specials > 0 ? " with NaN/Inf" : ""), winograd_options());
    }
  }
}

// One infinity in the input: the Winograd transforms would turn its neighbours' outputs into NaN; the
// call runs the direct kernel, so exactly the outputs whose windows hold it are infinite (or NaN where
// the weights' signs meet), as in the reference.
TEST(LibraryWinograd, NonFiniteAndHugeInputsTakeTheDirectKernel) {
  Graph g = basic_block(1, 16, 8, 9);
  const LibraryGroup grp = groups_of(g).at(0);  // conv + bn + relu: no NaN guard needed for a finite input
  ASSERT_TRUE(winograd_ready(g, grp));
  std::mt19937 rng(3);
  for (float special : {INFINITY, -INFINITY, NAN, 3e30f, -1e25f}) {
    auto in = inputs_of(g, grp, rng, 0.0);
    in.begin()->second.data<float>()[8 * 3 + 4] = special;  // channel 0, row 3, column 4
    const std::string what = fmt::format("input holding {}", special);
    check_group(g, grp, in, 1e-4, 1e-4, what, winograd_options());
    if (std::isinf(special)) {  // the 3x3 outputs around it per channel: finite ones elsewhere
      Tensor got = run_fused(g, grp, in, winograd_options());
      int64_t nonfinite = 0;
      for (int64_t i = 0; i < got.numel(); ++i) nonfinite += !std::isfinite(got.data<float>()[i]);
      EXPECT_LE(nonfinite, 16 * 9) << what;
    }
  }
}

// The autotuner offers both kernels on the group's own weights; whichever wins, the kernel matches the
// reference, and a group Winograd cannot take (tanh after it) is not offered.
TEST(LibraryWinograd, AutotunerChoosesBetweenDirectAndWinograd) {
  Options options;
  options.cpu_conv_algorithm = "auto";
  Graph g = basic_block(1, 32, 24, 13);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 2u);
  autotune::Autotuner tuner(options, "", [](const std::string&) {});
  std::mt19937 rng(5);
  for (const auto& grp : groups) {
    ASSERT_TRUE(backend::cpu::tunes_conv(g, grp, options)) << grp.label;
    auto kernel = backend::cpu::tune_conv_kernel(g, grp, options, tuner, "test-device");
    auto in = inputs_of(g, grp, rng, 0.001);
    Tensor got = kernel->run(kernel_inputs(g, grp, in), int64_t{1} << 30);
    expect_close(got, run_nodes(g, grp, in, true), 1e-4, 1e-4, grp.label + " as tuned vs fp64 reference");
    const autotune::TuneResult& r = tuner.results().back();
    ASSERT_EQ(r.table.size(), 2u) << grp.label;
    for (const auto& t : r.table)
      EXPECT_EQ(t.status, autotune::CandidateStatus::timed) << grp.label << " " << t.name << ": " << t.note;
  }
  Options direct = options;
  direct.cpu_conv_algorithm = "direct";
  EXPECT_FALSE(backend::cpu::tunes_conv(g, groups[0], direct));

  GraphBuilder b("tanh");
  ValueId x = b.input("x", DType::f32, {1, 16, 12, 12});
  ValueId w = b.constant(random_uniform(DType::f32, {16, 16, 3, 3}, -0.3, 0.3, 2));
  b.output(b.op(OpKind::Tanh, {b.op(OpKind::Conv, {x, w}, {{"pads", {1, 1, 1, 1}}})}), "y");
  Graph t = inferred(b);
  EXPECT_FALSE(backend::cpu::tunes_conv(t, groups_of(t).at(0), options)) << "tanh has no Winograd post-op";
}

}  // namespace
}  // namespace kiln::library_test
