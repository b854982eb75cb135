// DFT read as a MatMul with a constant matrix of cosines and sines: the signal axis moved next to the
// complex axis, the two flattened ([L * c], c = 1 real or 2 complex), times W [L * c, K * o], back to
// [K, o] and the axis returned. Forward: K = L outputs (L / 2 + 1 with onesided), complex; inverse: the 1 / L
// scale inside W; inverse with onesided: the real signal of length 2 (L - 1) whose half spectrum the input
// is (the conjugate half implied, the imaginary parts of the first and Nyquist terms unused, as numpy's
// irfft). The signal length must be static and the axis known at import (opset 20's axis input a
// constant); dft_length is not read. Every output depends on every input, so NaN spreads as it should.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "onnx/import_rewrites.h"
#include "support/error.h"

namespace kiln::rewrites {
namespace {

void dft(OnnxGraphReader& b, NodeForm& n) {
  need_io(n);
  if (n.has_input(1)) unsupported("{}: dft_length is not supported", n.desc());
  ValueId x = n.inputs[0];
  std::optional<int> rank = b.known_rank(x);
  if (!rank || *rank < 3) unsupported("{}: the input must be declared of rank 3 or more", n.desc());
  int64_t axis = -2;  // opset 20's form (older nodes' attribute became input 2)
  if (n.has_input(2)) {
    const std::shared_ptr<const Tensor>& c = b.graph().value(n.inputs[2]).constant;
    if (!c || c->numel() != 1) unsupported("{}: the axis input must be a constant", n.desc());
    axis = c->as_int64(0);
  }
  if (axis < 0) axis += *rank;
  if (axis < 1 || axis >= *rank - 1)
    user_error("{}: axis {} is not a signal axis of a rank-{} input", n.desc(), axis, *rank);
  const auto& shape = b.graph().value(x).type.shape;
  const Dim& length_dim = shape[size_t(axis)];
  const Dim& comps = shape[size_t(*rank - 1)];
  if (!length_dim.is_static() || !comps.is_static()) unsupported("{}: the signal's length must be static", n.desc());
  if (comps.value != 1 && comps.value != 2) user_error("{}: the last axis must be 1 (real) or 2 (complex), is {}", n.desc(), comps.value);
  const bool inverse = n.int_attr("inverse", 0) != 0, onesided = n.int_attr("onesided", 0) != 0;
  const int64_t L = length_dim.value, c = comps.value;
  if (L < 1) user_error("{}: a signal of length {}", n.desc(), L);
  if (inverse && onesided && (c != 2 || L < 2)) user_error("{}: an inverse onesided DFT takes a complex half spectrum", n.desc());
  // Output length K and components o; the transform's period p.
  const int64_t p = inverse && onesided ? 2 * (L - 1) : L;
  const int64_t K = inverse && onesided ? p : onesided ? L / 2 + 1 : L, o = inverse && onesided ? 1 : 2;
  std::vector<float> w(size_t(L * c * K * o), 0.0f);
  const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / double(p) : 1.0;
  for (int64_t t = 0; t < L; ++t)
    for (int64_t k = 0; k < K; ++k) {
      // Input element t, output k: theta = 2 pi t k / p (t the frequency for the inverse onesided form).
      const double theta = 2.0 * std::numbers::pi * double((t * k) % p) / double(p);
      const double cs = std::cos(theta) * scale, sn = std::sin(theta) * scale;
      auto at = [&](int64_t comp_in, int64_t comp_out) -> float& { return w[size_t(((t * c + comp_in) * K + k) * o + comp_out)]; };
      if (o == 1) {  // real output of a half spectrum: twice the terms that stand for a conjugate pair
        const double twice = t == 0 || (p % 2 == 0 && t == p / 2) ? 1.0 : 2.0;
        at(0, 0) = float(twice * cs);
        at(1, 0) = float(-twice * sn);
        continue;
      }
      at(0, 0) = float(cs), at(0, 1) = float(sign * sn);
      if (c == 2) at(1, 0) = float(-sign * sn), at(1, 1) = float(cs);
    }
  Tensor wt = Tensor::empty(DType::f32, {L * c, K * o});
  std::copy(w.begin(), w.end(), static_cast<float*>(wt.raw()));
  ValueId weight = b.graph().add_constant(b.unique_name(n.name + "_dft_matrix"), std::move(wt));
  // The axis next to the components: perm moves `axis` to rank - 2.
  std::vector<int64_t> perm;
  for (int64_t a = 0; a < *rank - 1; ++a)
    if (a != axis) perm.push_back(a);
  perm.push_back(axis), perm.push_back(*rank - 1);
  std::vector<int64_t> back(static_cast<size_t>(*rank));
  for (size_t i = 0; i < perm.size(); ++i) back[size_t(perm[i])] = int64_t(i);
  AttrMap to_last, to_place;
  to_last["perm"] = Attribute{perm};
  to_place["perm"] = Attribute{back};
  ValueId moved = add(b, n, OpKind::Transpose, {x}, "moved", std::move(to_last));
  std::vector<int64_t> flat_shape(size_t(*rank - 2), 0);  // 0: keep the dim
  flat_shape.push_back(L * c);
  ValueId flat = add(b, n, OpKind::Reshape, {moved, b.constant_i64(n.name + "_flat", flat_shape)}, "flat");
  ValueId typed = add(b, n, OpKind::CastLike, {weight, x}, "matrix");
  ValueId product = add(b, n, OpKind::MatMul, {flat, typed}, "product");
  std::vector<int64_t> out_shape(size_t(*rank - 2), 0);
  out_shape.push_back(K), out_shape.push_back(o);
  ValueId shaped = add(b, n, OpKind::Reshape, {product, b.constant_i64(n.name + "_out_shape", out_shape)}, "shaped");
  add(b, n, OpKind::Transpose, {shaped}, "out", std::move(to_place), n.outputs[0]);
}

}  // namespace

std::span<const RewriteRow> dft_rewrites() {
  static constexpr RewriteRow kRows[] = {{"DFT", dft}};
  return kRows;
}

}  // namespace kiln::rewrites
