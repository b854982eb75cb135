// Every recognised pattern compiled to a row kernel and compared with the fp64 reference run of the same
// nodes, on random inputs with NaN, +-inf, rows of all -inf, widths 1, 3, 17, 1000, a wide row that
// takes the split path, and symbolic rows at two sizes from one compile. All kernels are compiled in
// one batch (two compiler jobs) when the suite starts.
#include <gtest/gtest.h>

#include <memory>

#include "row_graphs.h"
#include "rows_test_util.h"

namespace kiln::rows_test {
namespace {

struct Case {
  Graph graph;
  schedule::RowGroup group;
};

class RowsEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_ = std::make_unique<TestCache>();
    add("softmax", softmax_graph({Dim::sym("n"), Dim::sym("w")}));
    add("logsoftmax", softmax_graph({Dim::sym("n"), Dim::fixed(17)}, -1, true));
    add("softmax_axis1", softmax_graph({Dim::fixed(4), Dim::fixed(9), Dim::fixed(1)}, 1));
    add("masked", masked_softmax_graph(3, Dim::sym("seq")));
    add("layernorm", residual_layernorm_graph(Dim::sym("rows"), 64));
    add("layernorm_nobias", residual_layernorm_graph(Dim::fixed(5), 3, false));
    add("layernorm2", layernorm_two_axes_graph());
    add("layernorm2_f64_stash", layernorm_two_axes_graph(11));
    add("softmax_f64", softmax_graph({Dim::sym("n"), Dim::fixed(33)}, -1, false, DType::f64));
    add("ln_pow", decomposed_layernorm_graph(1000, false));
    add("ln_mul", decomposed_layernorm_graph(17, true));
    add("mean_keep", reduce_graph(OpKind::ReduceMean, {Dim::sym("n"), Dim::sym("w")}, {-1}, 1));
    add("sum_two_axes", reduce_graph(OpKind::ReduceSum, {Dim::fixed(6), Dim::fixed(3), Dim::fixed(17)}, {1, 2}, 0));
    add("max_whole", reduce_graph(OpKind::ReduceMax, {Dim::sym("a"), Dim::fixed(1000)}, {}, 0));
    add("min_width1", reduce_graph(OpKind::ReduceMin, {Dim::fixed(7), Dim::fixed(1)}, {-1}, 1));
    std::vector<loops::RowKernel> kernels;
    for (auto& [name, c] : cases_) kernels.push_back(c.group.kernel);
    std::vector<CompiledKernel> built = compile_rows(kernels, *cache_);
    size_t i = 0;
    for (auto& [name, c] : cases_) compiled_.emplace(name, std::move(built[i++]));
  }
  static void TearDownTestSuite() {
    compiled_.clear();
    cases_.clear();
    cache_.reset();
  }

  static void add(const std::string& name, Graph g) {
    auto groups = schedule::find_row_groups(g, {});
    ASSERT_EQ(groups.size(), 1u) << name;
    cases_.emplace(name, Case{std::move(g), std::move(groups[0])});
  }

  // Runs case `name` on `given` (graph inputs by name) and compares with the oracle.
  static void check(const std::string& name, const std::map<std::string, Tensor>& given, double rtol = 2e-5,
                    double atol = 2e-6) {
    const Case& c = cases_.at(name);
    std::map<ValueId, Tensor> by_id;
    for (const auto& [n, t] : given) by_id[*c.graph.find_value(n)] = t;
    Tensor got = run_group(c.graph, c.group, compiled_.at(name), by_id);
    Tensor want = run_reference(c.graph, by_id).at(c.group.output);
    EXPECT_TRUE(close_to(got, want, rtol, atol)) << name << " " << given.begin()->second.shape_string();
  }

  static inline std::unique_ptr<TestCache> cache_;
  static inline std::map<std::string, Case> cases_;
  static inline std::map<std::string, CompiledKernel> compiled_;
};

TEST_F(RowsEndToEnd, SoftmaxAtManyWidthsWithSpecialValues) {
  for (int64_t w : {1, 3, 17, 1000}) {
    for (int64_t n : {1, 5, 40}) {
      Tensor x = random_with_specials(DType::f32, {n, w}, static_cast<uint32_t>(n * 7 + w), w > 3 ? 97 : 0);
      if (n > 2) fill_row(x, 1, w, -INFINITY);  // all -inf: a NaN row, as the eager kernel gives
      check("softmax", {{"x", x}});
    }
  }
}

TEST_F(RowsEndToEnd, WideRowsTakeTheSplitPath) {
  // cols >= 32768: each row is cut into parts over the threads (one NaN in the first row).
  Tensor x = random_with_specials(DType::f32, {2, 300000}, 5);
  x.data<float>()[123457] = NAN;
  check("softmax", {{"x", x}});
  check("mean_keep", {{"x", x}}, 1e-5, 1e-6);
  check("max_whole", {{"x", random_with_specials(DType::f32, {70, 1000}, 6)}});  // one row of 70000
  Tensor y = random_with_specials(DType::f32, {1, 200000}, 7);
  y.data<float>()[199999] = INFINITY;  // inf - inf: NaN everywhere
  check("softmax", {{"x", y}});
}

TEST_F(RowsEndToEnd, LogSoftmaxAndTrailingOnesAxis) {
  Tensor x = random_with_specials(DType::f32, {9, 17}, 8, 41);
  fill_row(x, 4, 17, -INFINITY);
  check("logsoftmax", {{"x", x}});
  check("logsoftmax", {{"x", random_with_specials(DType::f32, {2, 17}, 9)}});
  check("softmax_axis1", {{"x", random_with_specials(DType::f32, {4, 9, 1}, 10, 13)}});
  Tensor x64 = random_with_specials(DType::f64, {5, 33}, 15, 60);
  fill_row(x64, 2, 33, -INFINITY);
  check("softmax_f64", {{"x", x64}}, 1e-13, 1e-15);
}

TEST_F(RowsEndToEnd, MaskedSoftmaxGuardZeroesFullyMaskedRows) {
  for (int64_t seq : {1, 7, 33}) {
    Tensor scores = random_with_specials(DType::f32, {1, 3, seq, seq}, static_cast<uint32_t>(seq));
    Tensor mask = Tensor::empty(DType::boolean, {1, 1, seq, seq});
    for (int64_t i = 0; i < seq * seq; ++i) mask.data<bool>()[i] = (i * 7 + i / seq) % 5 != 0;
    for (int64_t j = 0; j < seq; ++j) mask.data<bool>()[j] = false;  // row 0 fully masked: guard gives 0
    check("masked", {{"scores", scores}, {"mask", mask}});
  }
}

TEST_F(RowsEndToEnd, LayerNormsMatchTheReference) {
  for (int64_t rows : {1, 6, 130}) {
    Tensor a = random_with_specials(DType::f32, {rows, 64}, static_cast<uint32_t>(rows), 300);
    check("layernorm", {{"a", a}, {"b", random_with_specials(DType::f32, {rows, 64}, 99)}}, 1e-4, 1e-5);
  }
  check("layernorm_nobias", {{"a", random_with_specials(DType::f32, {5, 3}, 1)}, {"b", random_with_specials(DType::f32, {5, 3}, 2)}},
        1e-4, 1e-5);
  check("layernorm2", {{"x", random_with_specials(DType::f32, {3, 4, 5}, 3, 29)}}, 1e-4, 1e-5);
  check("layernorm2_f64_stash", {{"x", random_with_specials(DType::f32, {7, 4, 5}, 3, 29)}}, 1e-6, 1e-7);
  check("ln_pow", {{"x", random_with_specials(DType::f32, {4, 1000}, 4, 2000)}}, 1e-4, 1e-5);
  check("ln_mul", {{"x", random_with_specials(DType::f32, {6, 17}, 5, 40)}}, 1e-4, 1e-5);
}

TEST_F(RowsEndToEnd, ReductionsWithAndWithoutKeepdims) {
  for (int64_t w : {1, 3, 17, 1000}) {
    Tensor x = random_with_specials(DType::f32, {6, w}, static_cast<uint32_t>(w), w > 3 ? 50 : 0);
    check("mean_keep", {{"x", x}}, 1e-5, 1e-6);
  }
  check("sum_two_axes", {{"x", random_with_specials(DType::f32, {6, 3, 17}, 11, 37)}}, 1e-5, 1e-5);
  check("max_whole", {{"x", random_with_specials(DType::f32, {3, 1000}, 12)}});
  Tensor nan_max = random_with_specials(DType::f32, {2, 1000}, 13);
  nan_max.data<float>()[1500] = NAN;  // one NaN anywhere gives NaN
  check("max_whole", {{"x", nan_max}});
  check("min_width1", {{"x", random_with_specials(DType::f32, {7, 1}, 14, 4)}});
}

TEST_F(RowsEndToEnd, EmptyRowsTouchNothingAndEmptyColumnsGiveIdentities) {
  const Case& mean = cases_.at("mean_keep");
  const CompiledKernel& ck = compiled_.at("mean_keep");
  call(ck, mean.group.kernel.name, {nullptr}, nullptr, {0, 5});  // no rows: null pointers are never read
  Tensor out = Tensor::empty(DType::f32, {3, 1});
  call(ck, mean.group.kernel.name, {nullptr}, out.raw(), {3, 0});  // mean of nothing: 0 / 0
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(out.data<float>()[i]));
  call(compiled_.at("softmax"), cases_.at("softmax").group.kernel.name, {nullptr}, nullptr, {4, 0});
}

}  // namespace
}  // namespace kiln::rows_test
