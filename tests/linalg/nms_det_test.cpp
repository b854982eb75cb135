// NonMaxSuppression on hand-checked box sets (both box formats, flipped corners, ties, limits, the
// score threshold, two batches and classes, boxes of no area) and Det against cofactor expansions in
// fp64, singular and NaN matrices and a batch; then the errors.
#include <cstdint>

#include "linalg_test_util.h"

namespace kiln::linalg_test {
namespace {

Tensor i64s(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(DType::i64, std::move(shape), v);
}

std::vector<Tensor> nms(const Node& n, const Tensor& boxes, const Tensor& scores, int64_t max_boxes, float iou,
                        const float* score_threshold = nullptr) {
  Tensor m = i64s({1}, {max_boxes}), t = f32({1}, {iou});
  Tensor s = score_threshold ? f32({1}, {*score_threshold}) : Tensor();
  std::vector<const Tensor*> in = {&boxes, &scores, &m, &t};
  if (score_threshold) in.push_back(&s);
  return run(n, in);
}

TEST(NonMaxSuppression, SuppressesByIouInScoreOrder) {
  // Corners [y1, x1, y2, x2]; box 1 overlaps box 0 with IoU 0.5 (flipped corners), box 2 is apart,
  // box 3 has no area, box 4 ties box 2's score at a higher index.
  Tensor boxes = f32({1, 5, 4}, {0, 0, 2, 2, 3, 2, 1, 0, 5, 5, 6, 6, 7, 7, 7, 9, 10, 10, 11, 11});
  Tensor scores = f32({1, 1, 5}, {0.9, 0.95, 0.5, 0.7, 0.5});
  Node n = make_node(OpKind::NonMaxSuppression, 5);
  n.inputs.pop_back();
  // IoU of boxes 0 and 1: intersection [1,0]-[2,2] = 2, union 4 + 4 - 2 = 6: 1/3.
  std::vector<Tensor> out = nms(n, boxes, scores, 10, 0.3f);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{0, 0, 1, 0, 0, 3, 0, 0, 2, 0, 0, 4}));
  out = nms(n, boxes, scores, 10, 0.34f);  // above 1/3: box 0 stays
  EXPECT_EQ(out[0].dim(0), 5);
  out = nms(n, boxes, scores, 2, 0.3f);  // at most two per class
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{0, 0, 1, 0, 0, 3}));
  out = nms(n, boxes, scores, 0, 0.3f);  // zero: none
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{0, 3}));
  const float threshold = 0.6f;  // strictly above
  Node thresholded = make_node(OpKind::NonMaxSuppression, 5);
  out = nms(thresholded, boxes, scores, 10, 0.3f, &threshold);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{0, 0, 1, 0, 0, 3}));
}

TEST(NonMaxSuppression, CenterFormatBatchesAndClasses) {
  // [x_center, y_center, width, height]: boxes 0 and 1 are the same square, box 2 elsewhere.
  Tensor boxes = f32({2, 3, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 10, 10, 2, 2, 0, 0, 1, 1, 5, 5, 1, 1, 0, 0, 1, 1});
  Tensor scores = f32({2, 2, 3}, {0.1, 0.2, 0.3, 0.3, 0.2, 0.1, 0.5, 0.5, 0.5, 0.9, 0.8, 0.7});
  Node n = make_node(OpKind::NonMaxSuppression, 4);
  set_attr(n, "center_point_box", int64_t{1});
  std::vector<Tensor> out = nms(n, boxes, scores, 3, 0.5f);
  EXPECT_EQ(out[0].to_int64_vector(), (std::vector<int64_t>{0, 0, 2, 0, 0, 1,   // class 0: 2, then 1 (0 suppressed)
                                                             0, 1, 0, 0, 1, 2,   // class 1: 0, then 2
                                                             1, 0, 0, 1, 0, 1,   // batch 1: ties by index; 2 = 0
                                                             1, 1, 0, 1, 1, 1}));
  set_attr(n, "center_point_box", int64_t{2});
  EXPECT_THROW(nms(n, boxes, scores, 3, 0.5f), UserError);
  set_attr(n, "center_point_box", int64_t{0});
  Tensor bad_scores = f32({2, 2, 4}, std::vector<double>(16, 0.5));
  EXPECT_THROW(nms(n, boxes, bad_scores, 3, 0.5f), UserError);
  EXPECT_THROW(nms(n, boxes, scores, 3, 1.5f), UserError);
}

double det3(const std::vector<double>& a) {
  return a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6]);
}

TEST(Det, MatchesCofactorsInBatchesAndTakesSingularAndNaN) {
  std::mt19937 rng(11);
  Tensor x = random_f32({2, 2, 3, 3}, rng);
  Node n = make_node(OpKind::Det, 1);
  for (bool reference : {false, true}) {
    Tensor in = reference ? convert_tensor(x, DType::f64) : x;
    Tensor d = run(n, {&in}, reference).at(0);
    ASSERT_EQ(d.shape(), (std::vector<int64_t>{2, 2}));
    for (int64_t b = 0; b < 4; ++b) {
      std::vector<double> a(9);
      for (int64_t i = 0; i < 9; ++i) a[size_t(i)] = x.as_double(b * 9 + i);
      EXPECT_NEAR(d.as_double(b), det3(a), 1e-5 * (1 + std::fabs(det3(a)))) << b;
    }
  }
  Tensor singular = f32({3, 3}, {1, 2, 3, 2, 4, 6, 0, 1, 1});
  EXPECT_EQ(run(n, {&singular}).at(0).as_double(0), 0.0);
  Tensor with_nan = f32({2, 2}, {1, NAN, 3, 4});
  EXPECT_TRUE(std::isnan(run(n, {&with_nan}).at(0).as_double(0)));
  Tensor one = f32({1, 1}, {-2.5});
  EXPECT_EQ(run(n, {&one}).at(0).as_double(0), -2.5);
  Tensor oblong = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run(n, {&oblong}), UserError);
  Tensor vec = f32({3}, {1, 2, 3});
  EXPECT_THROW(run(n, {&vec}), UserError);
}

}  // namespace
}  // namespace kiln::linalg_test
