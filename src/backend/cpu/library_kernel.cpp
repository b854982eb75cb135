// Library calls for LibraryGroups: MatMul and Gemm (convolution: library_kernel_conv.cpp). Run-time
// shapes and checks, the constant preparation (weights, Gemm's alpha and beta * C, bias) and the NaN
// guard around oneDNN's relu (see library_kernel.h).
#include "backend/cpu/library_kernel.h"

#include <cmath>

#include "backend/cpu/library_kernel_detail.h"

namespace kiln::backend::cpu {

using namespace schedule;
namespace {

using onednn::Epilogue;
using namespace library_detail;

class MatmulKernel final : public KernelBase {
 public:
  MatmulKernel(const Graph& g, const LibraryGroup& grp, onednn::Operands operands) : KernelBase(g, grp), core_(grp.core) {
    const Node& n = g.nodes[size_t(grp.core_node)];
    Epilogue e;
    e.act = to_onednn(grp.act);
    e.residual = grp.residual >= 0;
    e.act_after = to_onednn(grp.act_after);
    e.alpha = grp.scale;
    if (core_ == LibraryCore::batched_matmul) {
      if (grp.bias != kNoValue)
        e.bias = per_channel(constant_of(g, grp.bias), g.value(grp.output).type.shape.back().value);
      constants_nonfinite_ = nonfinite(e.bias);
      init_guard(e);
      mm_ = std::make_unique<onednn::FusedMatmul>(std::move(e), operands);
      return;
    }
    auto weights = g.value(n.inputs[1]).constant;
    const Tensor& b = constant_of(g, n.inputs[1]);
    bool trans_b = core_ == LibraryCore::gemm && n.attr_int("transB", 0) != 0;
    trans_a_ = core_ == LibraryCore::gemm && n.attr_int("transA", 0) != 0;
    K_ = b.dim(trans_b ? 1 : 0);
    N_ = b.dim(trans_b ? 0 : 1);
    if (core_ == LibraryCore::gemm) {
      e.alpha = static_cast<float>(n.attr_float("alpha", 1.0));
      if (n.has_input(2)) {
        float beta = static_cast<float>(n.attr_float("beta", 1.0));
        e.bias = per_channel(constant_of(g, n.inputs[2]), N_);
        for (float& x : e.bias) x = beta * x;  // as the eager Gemm: beta * C in f32
      }
    }
    if (grp.bias != kNoValue) e.bias = per_channel(constant_of(g, grp.bias), N_);
    constants_nonfinite_ = nonfinite(e.bias) || onednn::any_nonfinite(b.data<float>(), b.numel());
    init_guard(e);
    std::vector<int64_t> b_strides = trans_b ? std::vector<int64_t>{1, K_} : std::vector<int64_t>{N_, 1};
    mm_ = std::make_unique<onednn::FusedMatmul>(K_, N_, b_strides, weights, b.data<float>(), std::move(e), operands);
    // Static row count: create the primitive and pack the weights now rather than on the first run.
    const Shape& as = g.value(n.inputs[0]).type.shape;
    if (is_static(as)) {
      std::vector<int64_t> dims = static_dims(as);
      int64_t rows = trans_a_ ? dims[1] : checked_numel(dims, "matmul rows") / std::max<int64_t>(1, dims.back());
      if (rows > 0) mm_->prepare(call_for(rows, nullptr, nullptr, nullptr, onednn::kNumEpilogueSteps));
    }
  }

  Tensor run_into(const std::vector<const Tensor*>& in, int64_t max_bytes, Tensor planned) const override {
    const Tensor& a = *in.at(0);
    if (a.dtype() != DType::f32) fail("input dtype {}, expected f32", dtype_name(a.dtype()));
    if (core_ == LibraryCore::batched_matmul) return run_batched(a, *in.at(1), in, max_bytes, planned);
    std::vector<int64_t> out_dims;
    int64_t rows;
    if (core_ == LibraryCore::gemm) {
      if (a.rank() != 2 || a.dim(trans_a_ ? 0 : 1) != K_) fail("A has shape {}, K is {}", a.shape_string(), K_);
      rows = a.dim(trans_a_ ? 1 : 0);
      out_dims = {rows, N_};
    } else {
      if (a.rank() < 2 || a.dim(-1) != K_) fail("A has shape {}, K is {}", a.shape_string(), K_);
      out_dims = a.shape();
      out_dims.back() = N_;
      rows = a.numel() / K_;
    }
    const Tensor* r = residual(in, out_dims);
    Tensor out = allocate(out_dims, max_bytes, planned);
    if (out.numel() == 0) return out;
    int steps = steps_for({&a, r});
    if (!mm_->run(call_for(rows, a.data<float>(), r ? r->data<float>() : nullptr, out.data<float>(), steps)))
      internal_error("library call '{}': oneDNN has no matmul for {}", label_, a.shape_string());
    finish(out, steps, r);
    return out;
  }

 private:
  onednn::FusedMatmul::Call call_for(int64_t rows, const float* a, const float* r, float* c, int steps) const {
    onednn::FusedMatmul::Call call;
    call.desc.a_dims = {rows, K_};
    call.desc.a_strides = trans_a_ ? std::vector<int64_t>{1, rows} : std::vector<int64_t>{K_, 1};
    call.desc.c_dims = {rows, N_};
    call.a = a;
    call.residual = r;
    call.c = c;
    call.steps = steps;
    return call;
  }

  Tensor run_batched(const Tensor& a, const Tensor& b, const std::vector<const Tensor*>& in, int64_t max_bytes,
                     Tensor& planned) const {
    if (b.dtype() != DType::f32 || a.rank() != b.rank() || a.rank() < 2 || a.dim(-1) != b.dim(-2))
      fail("operands {} and {} do not multiply", a.shape_string(), b.shape_string());
    for (int i = 0; i + 2 < a.rank(); ++i)
      if (a.dim(i) != b.dim(i)) fail("batch dims of {} and {} differ", a.shape_string(), b.shape_string());
    std::vector<int64_t> out_dims = a.shape();
    out_dims.back() = b.dim(-1);
    const Epilogue& e = mm_->epilogue();
    if (!e.bias.empty() && static_cast<int64_t>(e.bias.size()) != out_dims.back())
      fail("N is {}, the bias has {} values", out_dims.back(), e.bias.size());
    const Tensor* r = residual(in, out_dims);
    Tensor out = allocate(out_dims, max_bytes, planned);
    if (out.numel() == 0) return out;
    if (a.dim(-1) == 0) {  // empty sums: the epilogue of zeros
      onednn::apply_epilogue_plain(e, 0, out.data<float>(), out.numel(), 1, out_dims.back(), r ? r->data<float>() : nullptr);
      return out;
    }
    onednn::FusedMatmul::Call call;
    call.desc.a_dims = a.shape();
    call.desc.b_dims = b.shape();
    call.desc.c_dims = out_dims;
    auto strides = [](const std::vector<int64_t>& d) {
      std::vector<int64_t> s(d.size(), 1);
      for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
      return s;
    };
    call.desc.a_strides = strides(a.shape());
    call.desc.b_strides = strides(b.shape());
    call.a = a.data<float>();
    call.b = b.data<float>();
    call.residual = r ? r->data<float>() : nullptr;
    call.c = out.data<float>();
    call.steps = steps_for({&a, &b, r});
    if (!mm_->run(call)) internal_error("library call '{}': oneDNN has no matmul for {}", label_, a.shape_string());
    finish(out, call.steps, r);
    return out;
  }

  void finish(Tensor& out, int steps, const Tensor* r) const {
    if (steps < onednn::kNumEpilogueSteps)
      onednn::apply_epilogue_plain(mm_->epilogue(), steps, out.data<float>(), out.numel(), 1, out.dim(-1),
                                   r ? r->data<float>() : nullptr);
  }

  LibraryCore core_;
  bool trans_a_ = false;
  int64_t K_ = 0, N_ = 0;
  std::unique_ptr<onednn::FusedMatmul> mm_;
};

}  // namespace

std::unique_ptr<LibraryKernel> build_library_kernel(const Graph& g, const LibraryGroup& group, const Options& options) {
  KILN_INTERNAL_CHECK(group.core_node >= 0 && !group.nodes.empty() && group.output != kNoValue,
                      "build_library_kernel: empty group");
  const onednn::Operands operands = bf16_products(options) ? onednn::Operands::bf16 : onednn::Operands::f32;
  if (group.core == LibraryCore::conv)
    return library_detail::make_conv_kernel(g, group, operands, bf16_products(options) ? onednn::ConvAlgorithm::direct
                                                                                      : conv_algorithm(options));
  if (group.core == LibraryCore::softmax || group.core == LibraryCore::log_softmax)
    return library_detail::make_softmax_kernel(g, group);
  return std::make_unique<MatmulKernel>(g, group, operands);
}

}  // namespace kiln::backend::cpu
