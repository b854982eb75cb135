// STFT and MelWeightMatrix, eager: their output sizes come from input values (frame_step, frame_length,
// dft_length, num_mel_bins), exact where those are known, else fresh dims.
//
// STFT(signal [B, L, 1 real | 2 complex], frame_step, window [W]?, frame_length?) -> [B, frames, bins, 2]:
// frame f is signal[f * step, f * step + N) times the window (ones without one), N = frame_length, else
// the window's length, else L; frames = 1 + (L - N) / step; bins = N / 2 + 1 when onesided (the default,
// real signals only), else N. Each bin is the plain DFT sum, in double.
//
// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz) ->
// [dft_length / 2 + 1, num_mel_bins] of triangular filters, as ONNX's reference computes them (its
// num_mel_bins + 2 band edges spaced by the mel range over num_mel_bins + 2, floored to DFT bins).
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

int64_t scalar_int(const Node& node, const Tensor& t, const char* what) {
  if (t.numel() != 1) node_fail(node, "{} must hold one value, has {}", what, t.numel());
  return t.as_int64(0);
}

// ---- STFT ----

struct StftGeometry {
  int64_t batch = 0, length = 0, step = 0, frame = 0, frames = 0, bins = 0;
  bool complex = false, onesided = true;
};

// From the static signal shape and the values; nullopt where a value is not known.
std::optional<StftGeometry> stft_geometry(const Node& node, const std::vector<int64_t>& signal,
                                          const Tensor* step, const Tensor* window, const Tensor* frame_length,
                                          bool has_window, bool has_frame_length) {
  StftGeometry g;
  if (signal.size() != 3 || (signal[2] != 1 && signal[2] != 2))
    node_fail(node, "signal must be [batch, length, 1 (real) or 2 (complex)]");
  g.batch = signal[0], g.length = signal[1], g.complex = signal[2] == 2;
  g.onesided = node.attr_int("onesided", 1) != 0;
  if (g.onesided && g.complex) node_fail(node, "onesided=1 takes a real signal, this one is complex");
  if (!step || (has_frame_length && !frame_length)) return std::nullopt;
  g.step = scalar_int(node, *step, "frame_step");
  if (g.step <= 0) node_fail(node, "frame_step must be positive, is {}", g.step);
  if (has_frame_length) g.frame = scalar_int(node, *frame_length, "frame_length");
  if (has_window) {
    if (!window) return std::nullopt;
    if (window->rank() != 1) node_fail(node, "window must be 1-D, is {}", window->shape_string());
    if (has_frame_length && window->dim(0) != g.frame)
      node_fail(node, "window has {} values for frame_length {}", window->dim(0), g.frame);
    g.frame = window->dim(0);
  }
  if (!has_window && !has_frame_length) g.frame = g.length;
  if (g.frame <= 0 || g.frame > g.length)
    node_fail(node, "frame_length {} is not in [1, {}] (the signal's length)", g.frame, g.length);
  g.frames = 1 + (g.length - g.frame) / g.step;
  g.bins = g.onesided ? g.frame / 2 + 1 : g.frame;
  return g;
}

std::vector<TensorType> infer_stft(InferContext& ctx) {
  const TensorType& s = ctx.in(0);
  if (!is_float(s.dtype)) ctx.fail("signal must be float, is {}", dtype_name(s.dtype));
  if (s.rank() != 3) ctx.fail("signal must be [batch, length, 1 or 2], has rank {}", s.rank());
  std::optional<StftGeometry> g;
  if (is_static(s.shape)) {
    std::vector<int64_t> shape;
    for (const Dim& d : s.shape) shape.push_back(d.value);
    g = stft_geometry(ctx.node(), shape, ctx.value(1), ctx.value(2), ctx.value(3), ctx.has(2), ctx.has(3));
  }
  const Dim frames = g ? Dim::fixed(g->frames) : ctx.fresh_dim(), bins = g ? Dim::fixed(g->bins) : ctx.fresh_dim();
  return {TensorType{s.dtype, {s.shape[0], frames, bins, Dim::fixed(2)}}};
}

void kernel_stft(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor* window = in.size() > 2 ? in[2] : nullptr;
  const Tensor* frame_length = in.size() > 3 ? in[3] : nullptr;
  const StftGeometry g = *stft_geometry(node, in[0]->shape(), in[1], window, frame_length, window, frame_length);
  const Tensor& x = *in[0];
  std::vector<double> w(size_t(g.frame), 1.0), cosines(size_t(g.frame)), sines(size_t(g.frame));
  if (window)
    for (int64_t n = 0; n < g.frame; ++n) w[size_t(n)] = window->as_double(n);
  for (int64_t m = 0; m < g.frame; ++m) {  // twiddles by k * n mod N, exact arguments
    const double angle = 2 * std::numbers::pi * double(m) / double(g.frame);
    cosines[size_t(m)] = std::cos(angle), sines[size_t(m)] = std::sin(angle);
  }
  const int64_t c = g.complex ? 2 : 1;
  dispatch_float(out[0].dtype(), [&](auto t) {
    using T = decltype(t);
    T* y = out[0].data<T>();
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t f = 0; f < g.frames; ++f)
        for (int64_t k = 0; k < g.bins; ++k) {
          double re = 0, im = 0;
          for (int64_t n = 0; n < g.frame; ++n) {
            const int64_t at = (b * g.length + f * g.step + n) * c;
            const double xr = x.as_double(at) * w[size_t(n)], xi = g.complex ? x.as_double(at + 1) * w[size_t(n)] : 0;
            const size_t m = size_t((k * n) % g.frame);
            // (xr + i xi) (cos - i sin)
            re += xr * cosines[m] + xi * sines[m];
            im += xi * cosines[m] - xr * sines[m];
          }
          T* o = y + ((b * g.frames + f) * g.bins + k) * 2;
          o[0] = T(re), o[1] = T(im);
        }
  });
}

// ---- MelWeightMatrix ----

struct MelInputs {
  int64_t mel_bins = 0, dft_length = 0, sample_rate = 0;
  double lower = 0, upper = 0;
};

MelInputs mel_inputs(const Node& node, std::span<const Tensor* const> in) {
  MelInputs m;
  m.mel_bins = scalar_int(node, *in[0], "num_mel_bins");
  m.dft_length = scalar_int(node, *in[1], "dft_length");
  m.sample_rate = scalar_int(node, *in[2], "sample_rate");
  if (in[3]->numel() != 1 || in[4]->numel() != 1) node_fail(node, "the edge frequencies must be scalars");
  m.lower = in[3]->as_double(0), m.upper = in[4]->as_double(0);
  if (m.mel_bins <= 0 || m.dft_length <= 0 || m.sample_rate <= 0)
    node_fail(node, "num_mel_bins, dft_length and sample_rate must be positive, are {}, {} and {}", m.mel_bins,
              m.dft_length, m.sample_rate);
  if (!(m.lower >= 0 && m.lower <= m.upper && std::isfinite(m.upper)))
    node_fail(node, "the edges {} and {} Hz are not 0 <= lower <= upper", m.lower, m.upper);
  return m;
}

DType mel_dtype(const InferContext& ctx) {
  const Node& n = ctx.node();
  if (!n.has_attr("output_datatype")) return DType::f32;
  const std::optional<DType> t = dtype_from_name(n.attr_string("output_datatype", ""));
  if (!t || t == DType::boolean) ctx.fail("output_datatype '{}' is not a numeric type", n.attr_string("output_datatype", ""));
  return *t;
}

std::vector<TensorType> infer_mel(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (!is_integer(ctx.in(i).dtype)) ctx.fail("input {} must be an integer, is {}", i, dtype_name(ctx.in(i).dtype));
  Dim rows = ctx.fresh_dim(), cols = ctx.fresh_dim();
  if (ctx.value(0) && ctx.value(1)) {
    const int64_t bins = scalar_int(ctx.node(), *ctx.value(0), "num_mel_bins");
    const int64_t dft = scalar_int(ctx.node(), *ctx.value(1), "dft_length");
    if (bins <= 0 || dft <= 0) ctx.fail("num_mel_bins and dft_length must be positive, are {} and {}", bins, dft);
    rows = Dim::fixed(dft / 2 + 1), cols = Dim::fixed(bins);
  }
  return {TensorType{mel_dtype(ctx), {rows, cols}}};
}

void kernel_mel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const MelInputs m = mel_inputs(node, in);
  const int64_t rows = m.dft_length / 2 + 1, edges = m.mel_bins + 2;
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low = mel(m.lower), step = (mel(m.upper) - low) / double(edges);
  std::vector<int64_t> bin(static_cast<size_t>(edges));
  for (int64_t i = 0; i < edges; ++i) {
    const double hz = 700 * (std::pow(10.0, (double(i) * step + low) / 2595) - 1);
    bin[size_t(i)] = int64_t(std::floor(double(m.dft_length + 1) * hz / double(m.sample_rate)));
    if (bin[size_t(i)] >= rows)
      node_fail(node, "upper_edge_hertz {} lies past the last DFT bin of dft_length {} at sample_rate {}", m.upper,
                m.dft_length, m.sample_rate);
  }
  std::vector<double> w(static_cast<size_t>(rows * m.mel_bins), 0.0);
  for (int64_t i = 0; i < m.mel_bins; ++i) {
    const int64_t left = bin[size_t(i)], centre = bin[size_t(i + 1)], right = bin[size_t(i + 2)];
    if (centre == left) w[size_t(centre * m.mel_bins + i)] = 1;
    for (int64_t j = left; centre > left && j <= centre; ++j) w[size_t(j * m.mel_bins + i)] = double(j - left) / double(centre - left);
    for (int64_t j = centre; right > centre && j < right; ++j) w[size_t(j * m.mel_bins + i)] = double(right - j) / double(right - centre);
  }
  const Tensor typed = Tensor::from_vector<double>(out[0].dtype(), {rows, m.mel_bins}, w);
  std::memcpy(out[0].raw(), typed.raw(), typed.nbytes());
}

}  // namespace

void register_spectral_ops(OpRegistry& r) {
  OpDef stft;
  stft.infer = infer_stft;
  stft.kernel = kernel_stft;
  stft.min_inputs = 2;
  stft.max_inputs = 4;
  r.add(OpKind::STFT, stft);
  OpDef mel;
  mel.infer = infer_mel;
  mel.kernel = kernel_mel;
  mel.min_inputs = mel.max_inputs = 5;
  mel.handles_half = true;  // writes any numeric type itself
  r.add(OpKind::MelWeightMatrix, mel);
}

}  // namespace kiln::linalg_ops
