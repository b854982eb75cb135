// GridSample (opset 20 form; GridSample-16's mode names are renamed on import): X [N, C, D1..Dr]
// sampled at grid [N, O1..Or, r] -> [N, C, O1..Or]. The grid holds normalised coordinates in [-1, 1],
// the last spatial dim first (x, y, z). Modes nearest, linear (r-linear) and cubic (Keys, a = -0.75);
// padding zeros, border (clamped) or reflection (mirrored at the borders). Like Resize, each axis gets
// its taps (index, weight) and an output is the sum over their product; taps of weight exactly 0 are
// dropped, so a point on a sample returns that sample even beside an Inf. A NaN coordinate gives NaN.
#include <algorithm>
#include <cmath>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

enum class Mode { nearest, linear, cubic };
enum class Padding { zeros, border, reflection };

struct GridAttrs {
  Mode mode = Mode::linear;
  Padding padding = Padding::zeros;
  bool align_corners = false;
};

GridAttrs read_grid_attrs(const Node& node) {
  GridAttrs a;
  const std::string mode = node.attr_string("mode", "linear");
  if (mode == "linear") a.mode = Mode::linear;
  else if (mode == "nearest") a.mode = Mode::nearest;
  else if (mode == "cubic") a.mode = Mode::cubic;
  else node_fail(node, "unknown mode '{}' (expected linear, nearest or cubic)", mode);
  const std::string padding = node.attr_string("padding_mode", "zeros");
  if (padding == "zeros") a.padding = Padding::zeros;
  else if (padding == "border") a.padding = Padding::border;
  else if (padding == "reflection") a.padding = Padding::reflection;
  else node_fail(node, "unknown padding_mode '{}' (expected zeros, border or reflection)", padding);
  const int64_t align = node.attr_int("align_corners", 0);
  if (align != 0 && align != 1) node_fail(node, "align_corners is {}, not 0 or 1", align);
  a.align_corners = align == 1;
  return a;
}

std::vector<TensorType> infer_grid_sample(InferContext& ctx) {
  read_grid_attrs(ctx.node());
  const TensorType &x = ctx.in(0), &grid = ctx.in(1);
  if (!is_float(x.dtype) || !is_float(grid.dtype)) ctx.fail("X and grid must be float, are {} and {}", dtype_name(x.dtype), dtype_name(grid.dtype));
  if (x.rank() < 3) ctx.fail("X must be [N, C, spatial...], has rank {}", x.rank());
  if (grid.rank() != x.rank()) ctx.fail("grid must have X's rank {}, has {}", x.rank(), grid.rank());
  const Dim& last = grid.shape.back();
  if (last.is_static() && last.value != x.rank() - 2)
    ctx.fail("grid's last dim must be the {} spatial dims of X, is {}", x.rank() - 2, last.value);
  if (x.shape[0].is_static() && grid.shape[0].is_static() && x.shape[0].value != grid.shape[0].value)
    ctx.fail("grid's batch {} is not X's {}", grid.shape[0].value, x.shape[0].value);
  Shape y{x.shape[0], x.shape[1]};
  y.insert(y.end(), grid.shape.begin() + 1, grid.shape.end() - 1);
  return {TensorType{x.dtype, y}};
}

// The sample coordinate of a normalised one along an axis of `size` samples.
double denormalize(double g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) / 2 * double(size - 1) : ((g + 1) * double(size) - 1) / 2;
}

// Mirrors x into [lo, hi] (each crossing of a border reverses the direction).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double beyond = x < lo ? lo - x : x - hi;
  const double r = std::fmod(beyond, 2 * range);  // an even number of crossings leaves r past the near border
  const double near = x < lo ? lo : hi, far = x < lo ? hi : lo, dir = x < lo ? 1 : -1;
  return r <= range ? near + dir * r : far - dir * (r - range);
}

void cubic_weights(double t, double w[4]) {
  constexpr double a = -0.75;
  const double t1 = t + 1, u = 1 - t, u1 = 2 - t;
  w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
  w[3] = ((a * u1 - 5 * a) * u1 + 8 * a) * u1 - 4 * a;
}

struct Tap {
  int64_t index = 0;  // -1: outside, reads 0 (zeros padding)
  double weight = 0;
};

class AxisSampler {
 public:
  AxisSampler(const GridAttrs& a, int64_t size)
      : a_(a), size_(size),
        lo_(a.align_corners ? 0.0 : -0.5), hi_(a.align_corners ? double(size - 1) : double(size) - 0.5) {}

  // The taps of normalised coordinate g, appended to `taps`; false for a NaN coordinate, or an
  // infinite one that reflection cannot place.
  bool taps(double g, std::vector<Tap>& taps) const {
    double x = denormalize(g, size_, a_.align_corners);
    if (std::isnan(x) || (std::isinf(x) && a_.padding == Padding::reflection)) return false;
    if (a_.mode == Mode::nearest) x = std::nearbyint(x);  // half to even
    // Only a coordinate past the borders moves (as in ONNX's reference: one inside them but before
    // sample 0 keeps its cubic taps on either side).
    if (a_.padding == Padding::border && (x < lo_ || x > hi_)) x = std::clamp(x, 0.0, double(size_ - 1));
    if (a_.padding == Padding::reflection) x = reflect(x, lo_, hi_);
    // Far outside, every tap reads 0: keep the integer conversions below in range.
    x = std::clamp(x, -4.0, double(size_) + 4);
    if (a_.mode == Mode::nearest) {
      add(std::trunc(x), 1, taps);
      return true;
    }
    const double x0 = std::floor(x), t = x - x0;
    if (a_.mode == Mode::linear) {
      add(x0, 1 - t, taps);
      add(x0 + 1, t, taps);
    } else {
      double w[4];
      cubic_weights(t, w);
      for (int k = 0; k < 4; ++k) add(x0 - 1 + k, w[k], taps);
    }
    return true;
  }

 private:
  void add(double i, double weight, std::vector<Tap>& taps) const {
    if (weight == 0) return;
    if (a_.padding == Padding::zeros && (i < 0 || i >= double(size_))) {
      taps.push_back({-1, weight});
      return;
    }
    if (a_.padding == Padding::border) i = std::clamp(i, 0.0, double(size_ - 1));
    if (a_.padding == Padding::reflection) i = std::trunc(reflect(i, lo_, hi_));
    taps.push_back({int64_t(i), weight});
  }

  GridAttrs a_;
  int64_t size_;
  double lo_, hi_;
};

template <class T>
void sample(const Node& node, const Tensor& x, const Tensor& grid, Tensor& y) {
  const GridAttrs a = read_grid_attrs(node);
  const size_t r = size_t(x.rank() - 2);
  const int64_t N = x.dim(0), C = x.dim(1);
  int64_t plane = 1, points = 1;
  std::vector<int64_t> stride(r);
  for (size_t k = r; k-- > 0;) {
    stride[k] = plane;
    plane *= x.dim(int64_t(k) + 2);
  }
  for (size_t k = 0; k < r; ++k) points *= grid.dim(int64_t(k) + 1);
  if (points > 0 && N * C > 0 && plane == 0) node_fail(node, "X has an empty spatial dim: nothing to sample");
  // A nearest sample rounds half to even in every rank (onnx 1.23's data; PyTorch rounds a 3-D one half
  // away from zero, and onnx 1.12's reference followed it).
  std::vector<AxisSampler> axes;
  for (size_t k = 0; k < r; ++k) axes.emplace_back(a, x.dim(int64_t(k) + 2));
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  std::vector<std::vector<Tap>> taps(r);
  std::vector<size_t> at(r);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < points; ++p) {
      bool defined = true;
      for (size_t k = 0; k < r; ++k) {
        taps[k].clear();
        // grid's last dim lists the spatial axes last first
        defined = axes[k].taps(grid.as_double((n * points + p) * int64_t(r) + int64_t(r - 1 - k)), taps[k]) && defined;
      }
      for (int64_t c = 0; c < C; ++c) {
        T* out = dst + (n * C + c) * points + p;
        if (!defined) {
          *out = T(NAN);
          continue;
        }
        const T* in = src + (n * C + c) * plane;
        double sum = 0;
        std::fill(at.begin(), at.end(), 0);
        bool empty = false;
        for (size_t k = 0; k < r; ++k) empty = empty || taps[k].empty();
        while (!empty) {  // every combination of one tap per axis
          double weight = 1;
          int64_t offset = 0;
          bool outside = false;
          for (size_t k = 0; k < r; ++k) {
            const Tap& t = taps[k][at[k]];
            weight *= t.weight;
            outside = outside || t.index < 0;
            offset += t.index * stride[k];
          }
          if (!outside) sum += weight * double(in[offset]);
          size_t k = r;
          while (k-- > 0 && ++at[k] == taps[k].size()) at[k] = 0;
          if (k == size_t(-1)) break;
        }
        *out = T(sum);
      }
    }
}

void kernel_grid_sample(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor &x = *in[0], &grid = *in[1];
  if (grid.dim(0) != x.dim(0)) node_fail(node, "grid's batch {} is not X's {}", grid.dim(0), x.dim(0));
  if (grid.dim(grid.rank() - 1) != x.rank() - 2)
    node_fail(node, "grid's last dim must be the {} spatial dims of X, is {}", x.rank() - 2, grid.dim(grid.rank() - 1));
  dispatch_float(x.dtype(), [&](auto t) { sample<decltype(t)>(node, x, grid, out[0]); });
}

}  // namespace

void register_grid_sample_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_grid_sample;
  def.kernel = kernel_grid_sample;
  def.min_inputs = def.max_inputs = 2;
  r.add(OpKind::GridSample, def);
}

}  // namespace kiln::linalg_ops
