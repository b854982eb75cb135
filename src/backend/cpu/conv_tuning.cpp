// Conv groups on the faster of oneDNN's direct and Winograd kernels, as the autotuner measures them on
// the group's own weights (see library_kernel.h, tune_conv_kernel). Each candidate is checked first
// against the group's output in fp64 at sampled positions, computed from the graph's operands: the
// convolution, its bias, a BatchNormalization, a bias Add and the epilogue, none of them folded.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include <oneapi/dnnl/dnnl_version.h>

#include "autotune/autotuner.h"
#include "autotune/choice_helpers.h"
#include "backend/cpu/library_kernel_detail.h"
#include "schedule/blocked_layouts.h"
#include "schedule/gemm_tail.h"

namespace kiln::backend::cpu {

using namespace schedule;
namespace {

using library_detail::constant_of;
using library_detail::ConvGeometry;

// A 2-D 3x3 window at stride 1 and dilation 1 without groups over an input of static shape, with at
// most ReLUs after it: where oneDNN has Winograd kernels. Null otherwise.
std::optional<onednn::ConvDesc> winograd_candidate(const Graph& g, const LibraryGroup& grp) {
  auto winograd_epilogue = [](LibraryActivation a) { return a == LibraryActivation::none || a == LibraryActivation::relu; };
  if (grp.core != LibraryCore::conv || !winograd_epilogue(grp.act) || !winograd_epilogue(grp.act_after))
    return std::nullopt;
  const Node& n = g.nodes[size_t(grp.core_node)];
  const Shape& xs = g.value(n.inputs[0]).type.shape;
  if (xs.size() != 4 || !is_static(xs)) return std::nullopt;
  ConvGeometry geometry(n, constant_of(g, n.inputs[1]));
  if (geometry.groups != 1 || geometry.kernel != std::vector<int64_t>{3, 3} ||
      geometry.strides != std::vector<int64_t>{1, 1} || geometry.dilations != std::vector<int64_t>{1, 1})
    return std::nullopt;
  onednn::ConvDesc d = geometry.describe(static_dims(xs), fmt::format("Conv node '{}'", n.name));
  if (checked_numel(d.src_dims, "conv input") == 0 || checked_numel(d.dst_dims, "conv output") == 0) return std::nullopt;
  return d;
}

double macs(const onednn::ConvDesc& d) {
  double m = 1;
  for (int64_t x : d.dst_dims) m *= double(x);
  for (size_t i = 1; i < d.weights_dims.size(); ++i) m *= double(d.weights_dims[i]);
  return m;
}

// Random input and residual, the graph's constants, and the group's output in fp64 at the corners and
// the centre of the first and last image, every channel.
struct ConvBench {
  std::vector<Tensor> owned;
  std::vector<const Tensor*> inputs;
  std::vector<int64_t> positions;  // flat output indices
  std::vector<double> want, magnitude;  // magnitude: sum of |x w| under the window, scaled like the output

  ConvBench(const Graph& g, const LibraryGroup& grp, const onednn::ConvDesc& d) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    owned.reserve(grp.inputs.size());  // inputs point into it
    for (size_t i = 0; i < grp.inputs.size(); ++i) {
      if (const auto& c = g.value(grp.inputs[i]).constant) {
        inputs.push_back(c.get());
        continue;
      }
      owned.push_back(Tensor::empty(DType::f32, i == 0 ? d.src_dims : d.dst_dims));  // X, else the residual
      for (int64_t j = 0; j < owned.back().numel(); ++j) owned.back().data<float>()[j] = u(rng);
      inputs.push_back(&owned.back());
    }
    reference(g, grp, d);
  }

  void reference(const Graph& g, const LibraryGroup& grp, const onednn::ConvDesc& d) {
    const Node& n = g.nodes[size_t(grp.core_node)];
    const float* x = inputs[0]->data<float>();
    // Flat offsets of [b, c, h, w] in a plain tensor or a blocked one (nChw16c: the group says which).
    auto offset = [](bool blocked, int64_t C, int64_t H, int64_t W, int64_t b, int64_t c, int64_t h, int64_t w) {
      return blocked ? (((b * (C / 16) + c / 16) * H + h) * W + w) * 16 + c % 16 : ((b * C + c) * H + h) * W + w;
    };
    const float* w = constant_of(g, n.inputs[1]).data<float>();
    const int64_t N = d.src_dims[0], C = d.src_dims[1], H = d.src_dims[2], W = d.src_dims[3];
    const int64_t OC = d.dst_dims[1], OH = d.dst_dims[2], OW = d.dst_dims[3];
    std::vector<double> scale(size_t(OC), 1.0), shift(size_t(OC), 0.0);  // everything after the sums, per channel
    if (n.has_input(2))
      for (int64_t o = 0; o < OC; ++o) shift[size_t(o)] = constant_of(g, n.inputs[2]).data<float>()[o];
    if (grp.batchnorm >= 0) {
      const Node& bn = g.nodes[size_t(grp.batchnorm)];
      const float* gamma = constant_of(g, bn.inputs[1]).data<float>();
      const float* beta = constant_of(g, bn.inputs[2]).data<float>();
      const float* mean = constant_of(g, bn.inputs[3]).data<float>();
      const float* var = constant_of(g, bn.inputs[4]).data<float>();
      const double eps = bn.attr_float("epsilon", 1e-5);
      for (size_t o = 0; o < size_t(OC); ++o) {
        const double s = double(gamma[o]) / std::sqrt(double(var[o]) + eps);
        shift[o] = (shift[o] - double(mean[o])) * s + double(beta[o]);
        scale[o] = s;
      }
    }
    if (grp.bias != kNoValue) {
      const Tensor& b = constant_of(g, grp.bias);
      for (int64_t o = 0; o < OC; ++o) shift[size_t(o)] += b.data<float>()[b.numel() == 1 ? 0 : o];
    }
    const loops::ScalarExpr epilogue = epilogue_expr(g, grp);
    const float* res = grp.residual >= 0 ? inputs[size_t(grp.residual)]->data<float>() : nullptr;
    std::vector<int64_t> images{0}, rows{0, OH / 2, OH - 1}, cols{0, OW / 2, OW - 1};
    if (N > 1) images.push_back(N - 1);
    for (auto* v : {&rows, &cols}) v->erase(std::unique(v->begin(), v->end()), v->end());
    for (int64_t b : images)
      for (int64_t o = 0; o < OC; ++o)
        for (int64_t oh : rows)
          for (int64_t ow : cols) {
            double acc = 0, mag = 0;
            for (int64_t c = 0; c < C; ++c)
              for (int64_t kh = 0; kh < 3; ++kh)
                for (int64_t kw = 0; kw < 3; ++kw) {
                  const int64_t ih = oh + kh - d.pad_begin[0], iw = ow + kw - d.pad_begin[1];
                  if (ih < 0 || iw < 0 || ih >= H || iw >= W) continue;
                  const double p = double(x[offset(grp.blocked_input, C, H, W, b, c, ih, iw)]) *
                                   double(w[((o * C + c) * 3 + kh) * 3 + kw]);
                  acc += p;
                  mag += std::fabs(p);
                }
            const int64_t at = offset(grp.blocked_output, OC, OH, OW, b, o, oh, ow);
            const int64_t res_at = offset(grp.blocked_residual, OC, OH, OW, b, o, oh, ow);
            std::vector<double> loads{acc * scale[size_t(o)] + shift[size_t(o)]};
            if (res) loads.push_back(res[res_at]);
            positions.push_back(at);
            want.push_back(expr_fp64(epilogue, loads));
            magnitude.push_back(mag * std::fabs(scale[size_t(o)]) + std::fabs(shift[size_t(o)]) + (res ? std::fabs(res[res_at]) : 0.0));
          }
  }

  // Within f32 rounding of sums of this size: 1e-5 of the terms' magnitude (a wrong kernel is off by
  // about the magnitude itself; Winograd's extra rounding measured at 3e-7 of it).
  bool check(const Tensor& out, std::string& why) const {
    for (size_t i = 0; i < positions.size(); ++i) {
      const double got = out.data<float>()[positions[i]];
      const double err = std::fabs(got - want[i]);
      if (!(err <= 1e-5 * magnitude[i] + 1e-6)) {
        why = fmt::format("output element {}: got {}, want {} (terms' magnitude {})", positions[i], got, want[i],
                          magnitude[i]);
        return false;
      }
    }
    return true;
  }
};

}  // namespace

bool tunes_conv(const Graph& g, const LibraryGroup& grp, const Options& options) {
  if (options.cpu_conv_algorithm != "auto" || bf16_products(options)) return false;
  std::optional<onednn::ConvDesc> d = winograd_candidate(g, grp);
  return d && macs(*d) >= kTuneMinMacs;
}

onednn::ConvAlgorithm conv_algorithm(const Options& options) {
  return options.cpu_conv_algorithm == "winograd" ? onednn::ConvAlgorithm::winograd : onednn::ConvAlgorithm::direct;
}

std::unique_ptr<LibraryKernel> tune_conv_kernel(const Graph& g, const LibraryGroup& grp, const Options& options,
                                                autotune::Autotuner& tuner, const std::string& device_key) {
  std::optional<onednn::ConvDesc> d = winograd_candidate(g, grp);
  KILN_INTERNAL_CHECK(d, "conv group '{}' is not a Winograd candidate", grp.label);
  auto bench = std::make_shared<std::unique_ptr<ConvBench>>();  // made on first use: a stored winner needs none
  auto get_bench = [bench, &g, &grp, desc = *d]() -> ConvBench& {
    if (!*bench) *bench = std::make_unique<ConvBench>(g, grp, desc);
    return **bench;
  };
  autotune::TuneRequest req;
  req.op_signature = grp.label + " 3x3 stride 1" + blocked_layout_note(grp);
  req.shape_key = fmt::format("N={},C={},H={},W={},OC={},pads={},{},{},{}", d->src_dims[0], d->src_dims[1],
                              d->src_dims[2], d->src_dims[3], d->dst_dims[1], d->pad_begin[0], d->pad_begin[1],
                              d->pad_end[0], d->pad_end[1]);
  req.dtype = "f32";
  req.device_key = device_key;
  req.library_versions = fmt::format("onednn {}.{}.{}", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH);
  req.settings_key = "cpu_conv_algorithm=auto;" + options.code_key();
  using Slot = std::shared_ptr<std::shared_ptr<LibraryKernel>>;
  std::vector<Slot> slots;
  for (onednn::ConvAlgorithm algorithm : {onednn::ConvAlgorithm::direct, onednn::ConvAlgorithm::winograd}) {
    auto slot = std::make_shared<std::shared_ptr<LibraryKernel>>();
    slots.push_back(slot);
    req.choices.push_back(autotune::make_choice(
        {std::string("onednn:") + onednn::conv_algorithm_name(algorithm),
         [slot, algorithm, &g, &grp] {
           bool ready = false;
           *slot = library_detail::make_conv_kernel(g, grp, onednn::Operands::f32, algorithm, &ready);
           if (!ready)
             internal_error("oneDNN has no {} convolution for this shape and epilogue", onednn::conv_algorithm_name(algorithm));
         },
         [slot, get_bench] { (*slot)->run(get_bench().inputs, INT64_MAX); },
         [slot, get_bench](std::string& why) {
           ConvBench& b = get_bench();
           return b.check((*slot)->run(b.inputs, INT64_MAX), why);
         }}));
  }
  autotune::TuneResult r = tuner.tune(req);
  const std::shared_ptr<LibraryKernel>& winner = *slots.at(r.winner_index);
  if (!winner) internal_error("autotune picked '{}', which did not build", r.winner);
  return std::make_unique<SharedLibraryKernel>(winner);
}

}  // namespace kiln::backend::cpu
