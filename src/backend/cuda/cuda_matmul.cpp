// MatMul and Gemm on cuBLASLt: library groups (a constant weight, a bias, a residual, an activation)
// and bare batched MatMuls. cuBLASLt computes alpha * A x B + bias (+ the residual, as C with beta 1);
// any other epilogue (GELU in the erf form, Relu, Tanh, ...) runs after it as a generated pointwise
// kernel from the group's one epilogue expression (schedule/gemm_tail.h), since cuBLASLt's GELU is the
// tanh approximation and kiln keeps ONNX's numbers.
//
// cuBLASLt picks its fast kernels only for 16-byte aligned rows: an output of N = 30522 bf16 columns gets
// a 2-byte aligned kernel that is several times slower. A constant weight is then padded with zero
// columns to the next multiple of 16 bytes (setting cuda_pad_gemm_columns), the wide product written to
// a scratch buffer and its first N columns copied out; the padded columns are never read.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <mutex>

#include "backend/cuda/cublaslt.h"
#include "backend/cuda/cuda_gemm_route.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_norm_fold.h"
#include "backend/cuda/device_ops.h"
#include "codegen/cuda/emit_pointwise_cuda.h"
#include "ops/node_runner.h"
#include "schedule/gemm_tail.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

using schedule::LibraryCore;
using schedule::LibraryGroup;

// A constant as one f32 per output column (shapes [N], [1, N], or a scalar broadcast).
std::vector<float> per_column(const Tensor& c, int64_t n, const std::string& what) {
  std::vector<float> v(static_cast<size_t>(n));
  if (!is_f32_or_half(c.dtype())) user_error("{}: a {} bias, expected f32, bf16 or f16", what, dtype_name(c.dtype()));
  if (c.numel() == 1) std::fill(v.begin(), v.end(), static_cast<float>(c.as_double(0)));
  else if (c.numel() == n && (c.rank() == 0 || c.dim(-1) == n))
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = static_cast<float>(c.as_double(i));
  else user_error("{}: bias of shape {} for {} output columns", what, c.shape_string(), n);
  return v;
}

class MatmulKernel final : public Kernel {
 public:
  // A library group (`group` set) or a bare MatMul node.
  MatmulKernel(const CudaRuntime& runtime, const Graph& g, const Node& core, const LibraryGroup* group,
               const Options& options, ModuleCache* modules)
      : runtime_(runtime), what_(g.describe(core)), allow_tf32_(options.allow_tf32), plans_(runtime, options.cuda_time_gemms) {
    const TensorType& out = g.value(group ? group->output : core.outputs[0]).type;
    dtype_ = out.dtype;
    if (!group) return;
    core_ = group->core;
    alpha_ = group->scale;
    residual_input_ = group->residual;
    if (core_ == LibraryCore::gemm) {
      trans_a_ = core.attr_int("transA", 0) != 0;
      trans_b_ = core.attr_int("transB", 0) != 0;
      alpha_ = static_cast<float>(core.attr_float("alpha", 1.0));
    }
    const int64_t n = out.shape.back().value;
    pad_weight(g, core, options, n);
    std::vector<float> bias;
    if (core_ == LibraryCore::gemm && core.has_input(2)) {
      const float beta = static_cast<float>(core.attr_float("beta", 1.0));
      bias = per_column(*g.value(core.inputs[2]).constant, n, what_);
      for (float& x : bias) x = beta * x;  // as the eager Gemm: beta * C in f32
    }
    if (group->bias != kNoValue) {
      std::vector<float> b = per_column(*g.value(group->bias).constant, n, what_);
      if (bias.empty()) bias = b;
      else for (size_t i = 0; i < b.size(); ++i) bias[i] += b[i];
    }
    if (modules && group->norm >= 0) {
      // A folded LayerNorm: the unfolded path (its row kernel, then the product) and the folded template.
      norm_row_ = make_norm_row_kernel(runtime, g, *group, options, *modules);
      norm_output_ = group->norm_output != kNoValue;
      std::vector<float> folded_bias = bias;
      const std::optional<RowNormFold> fold = fold_layer_norm(g, core, *group, folded_bias);
      if (fold) template_ = make_template_route(g, core, *group, options, folded_bias, &*fold);
      unfolded_template_ = make_template_route(g, core, *group, options, bias);
    } else if (modules) {
      template_ = make_template_route(g, core, *group, options, bias);
    }
    // In the output's dtype, as cuBLASLt adds it (bf16 / f16: one rounding of the f32 sum).
    if (!bias.empty()) {
      bias.resize(size_t(padded_n_ ? padded_n_ : n), 0.f);  // the padded columns' bias is never read
      bias_ = runtime.upload(convert_tensor(Tensor::from_vector<float>(DType::f32, {int64_t(bias.size())}, bias), dtype_));
    }

    const loops::ScalarExpr expr = schedule::epilogue_expr(g, *group);
    const bool residual_only = group->residual >= 0 && group->act == schedule::LibraryActivation::none &&
                               group->act_after == schedule::LibraryActivation::none && group->tail.empty();
    if (schedule::is_identity(expr) || residual_only) {
      lt_residual_ = residual_only;
      return;
    }
    KILN_INTERNAL_CHECK(group->tail.empty(), "{}: a GEMM tail on the CUDA backend, which tunes no GEMM", what_);
    // The epilogue is f32 arithmetic (gemm_tail.h); half operands are widened and the result narrowed.
    loops::PointwiseKernel k;
    loops::TensorDesc desc{dtype_, {}};
    for (const Dim& d : out.shape) desc.sizes.push_back(loops::from_dim(d));
    k.inputs.push_back(desc);
    if (group->residual >= 0) k.inputs.push_back(desc);
    k.output = desc;
    k.body = replace_loads(expr, [&k](int i) { return loops::cast(DType::f32, loops::load_broadcast(k, i)); });
    if (dtype_ != DType::f32) k.body = loops::cast(dtype_, k.body);
    epilogue_.emplace(std::move(k), "ep", *modules);
  }

  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& a = *args.inputs.at(0);
    const Tensor& b = *args.inputs.at(1);
    if (a.dtype() != dtype_ || b.dtype() != dtype_)
      user_error("{}: operands {} and {} for a {} product", what_, dtype_name(a.dtype()), dtype_name(b.dtype()),
                 dtype_name(dtype_));
    std::vector<int64_t> out_dims;
    GemmProblem p = problem(a, b, out_dims);
    const Tensor* residual = residual_input_ >= 0 ? args.inputs.at(size_t(residual_input_)) : nullptr;
    if (residual && residual->shape() != out_dims)
      user_error("{}: residual of shape {} for an output of [{}]", what_, residual->shape_string(),
                 fmt::join(out_dims, ","));
    Tensor out = output_buffer(runtime_, args, 0, dtype_, out_dims, what_);
    if (norm_row_.kernel) return launch_folded(args, a, b, residual, p, out_dims, out);
    if (out.numel() == 0) return {out};
    run_product(template_.get(), a, b, residual, p, out_dims, device_ptr(out));
    return {out};
  }

  // The product into `out_ptr` on the route's measured choice (a template, or `library`: by default
  // run_library), or `library`. A folded route also writes y (if not 0).
  void run_product(const GemmTemplateRoute* route, const Tensor& a, const Tensor& b, const Tensor* residual,
                   const GemmProblem& p, const std::vector<int64_t>& out_dims, CUdeviceptr out_ptr,
                   std::function<void(CUdeviceptr)> library = nullptr, CUdeviceptr y = 0) const {
    if (!library) library = [&](CUdeviceptr target) { run_library(a, b, residual, p, out_dims, target); };
    if (route && p.k > 0) {
      const CUdeviceptr res = residual ? device_ptr(*residual) : 0;
      const int choice = route->choose(p.m, device_ptr(a), device_ptr(b), res, library);
      if (choice >= 0) {
        route->run(choice, p.m, device_ptr(a), device_ptr(b), res, out_ptr, y);
        return;
      }
    }
    library(out_ptr);
  }

 private:
  // A folded LayerNorm's group: A is the LayerNorm's input. The template that standardises A's rows as it
  // multiplies (writing y, the LayerNorm's output, where other nodes read it), or the unfolded path: the
  // LayerNorm's row kernel into y, then the product of y as an unfolded group runs it (its own measured
  // choice of a template or cuBLASLt), so that the fold is chosen only where it beats the best of those.
  std::vector<Tensor> launch_folded(const LaunchArgs& args, const Tensor& a, const Tensor& b, const Tensor* residual,
                                    const GemmProblem& p, const std::vector<int64_t>& out_dims, const Tensor& out) const {
    Tensor y = norm_output_ ? output_buffer(runtime_, args, 1, dtype_, a.shape(), what_) : Tensor();
    auto outputs = [&]() -> std::vector<Tensor> { return norm_output_ ? std::vector<Tensor>{out, y} : std::vector<Tensor>{out}; };
    if (out.numel() == 0) return outputs();
    auto unfolded = [&](CUdeviceptr target) {
      if (!y.raw()) y = runtime_.empty(dtype_, a.shape());  // stream-ordered scratch
      std::vector<const Tensor*> inputs;
      for (int slot : norm_row_.slots) inputs.push_back(args.inputs.at(size_t(slot)));
      std::vector<Tensor> planned{y};
      const std::vector<Tensor> made = norm_row_.kernel->launch(LaunchArgs{inputs, planned, args.max_tensor_bytes, args.stream});
      KILN_INTERNAL_CHECK(made.size() == 1 && made[0].raw() == y.raw(), "{}: the LayerNorm's row kernel wrote elsewhere", what_);
      run_product(unfolded_template_.get(), y, b, residual, p, out_dims, target);
    };
    run_product(template_.get(), a, b, residual, p, out_dims, device_ptr(out), unfolded,
                norm_output_ ? device_ptr(y) : 0);
    return outputs();
  }

  // The product on cuBLASLt (and the epilogue kernel after it) into `out_ptr` (out_dims, dtype_).
  void run_library(const Tensor& a, const Tensor& b, const Tensor* residual, GemmProblem p,
                   const std::vector<int64_t>& out_dims, CUdeviceptr out_ptr) const {
    // The product goes straight to the output, or to a scratch buffer the epilogue kernel reads.
    const Tensor product = epilogue_ ? runtime_.empty(dtype_, out_dims) : Tensor();
    const CUdeviceptr product_ptr = epilogue_ ? device_ptr(product) : out_ptr;
    CUdeviceptr weight = device_ptr(b);
    Tensor wide;  // the padded product: [rows, padded_n_]
    if (padded_n_) {
      if (p.n != n_ || p.batch != 1)
        internal_error("{}: a padded weight of {} columns for a product of {}", what_, n_, p.n);
      std::vector<int64_t> wide_dims = out_dims;
      wide_dims.back() = p.n = padded_n_;
      wide = runtime_.empty(dtype_, wide_dims);
      weight = device_ptr(padded_b_);
    }
    const CUdeviceptr target = padded_n_ ? device_ptr(wide) : product_ptr;
    p.residual = lt_residual_;
    if (p.residual && p.batch > 1) p.batch_stride_residual = p.m * p.n;
    p.epilogue = bias_.raw() ? GemmEpilogue::bias : GemmEpilogue::none;
    if (p.k == 0) user_error("{}: a product over K = 0 is not on the CUDA backend yet", what_);
    plans_.run(p, device_ptr(a), weight, bias_.raw() ? device_ptr(bias_) : 0, lt_residual_ ? device_ptr(*residual) : 0,
               target);
    if (padded_n_) {  // the first n_ of each row's padded_n_ columns
      const CUdeviceptr pieces[] = {product_ptr, 0};
      const int64_t lens[] = {n_, padded_n_ - n_};
      runtime_.device_ops().split(runtime_.cuda_stream(), device_ptr(wide), pieces, lens, p.m, 1,
                                  static_cast<int>(dtype_size(dtype_)));
    }
    if (epilogue_) {
      std::vector<CUdeviceptr> inputs{device_ptr(product)};
      if (residual) inputs.push_back(device_ptr(*residual));
      epilogue_->run(runtime_.cuda_stream(), inputs, out_ptr, out_dims);
    }
  }

  // The GEMM template route (cuda_gemm_route.h) where the template fuses this group's whole epilogue: a
  // 2-D constant weight, no scale, bias then GELU (erf) or ReLU then a residual, no other pointwise work.
  std::unique_ptr<GemmTemplateRoute> make_template_route(const Graph& g, const Node& core, const LibraryGroup& group,
                                                         const Options& options, const std::vector<float>& bias,
                                                         const RowNormFold* fold = nullptr) const {
    using schedule::LibraryActivation;
    const Value& w = g.value(core.inputs.at(1));
    if (!w.constant || w.constant->rank() != 2 || padded_n_ || alpha_ != 1.f || trans_a_) return nullptr;
    if (core_ != LibraryCore::matmul && core_ != LibraryCore::gemm) return nullptr;
    if (group.act_after != LibraryActivation::none || !group.tail.empty()) return nullptr;
    GemmTemplateEpilogue e;
    if (group.act == LibraryActivation::gelu_erf) e.activation = GemmActivation::gelu;
    else if (group.act == LibraryActivation::relu) e.activation = GemmActivation::relu;
    else if (group.act != LibraryActivation::none) return nullptr;
    e.residual = residual_input_ >= 0;
    if (w.constant->dtype() != dtype_) return nullptr;
    const int64_t k = w.constant->dim(trans_b_ ? 1 : 0), n = w.constant->dim(trans_b_ ? 0 : 1);
    return GemmTemplateRoute::make(runtime_, what_, dtype_, k, n, trans_b_, bias, e, options, fold);
  }

  // The row-major problem for these operands; `out_dims` gets the output's shape.
  GemmProblem problem(const Tensor& a, const Tensor& b, std::vector<int64_t>& out_dims) const {
    GemmProblem p;
    p.dtype = dtype_;
    p.alpha = alpha_;
    p.allow_tf32 = allow_tf32_;
    p.pointer_alignment = 64;  // the arena's slots (the pool's own allocations are 256-byte aligned)
    if (core_ == LibraryCore::gemm) {
      if (a.rank() != 2 || b.rank() != 2) user_error("{}: Gemm of {} and {}", what_, a.shape_string(), b.shape_string());
      p.trans_a = trans_a_;
      p.trans_b = trans_b_;
      p.m = a.dim(trans_a_ ? 1 : 0);
      p.k = a.dim(trans_a_ ? 0 : 1);
      p.n = b.dim(trans_b_ ? 0 : 1);
      if (b.dim(trans_b_ ? 1 : 0) != p.k) user_error("{}: A {} and B {} do not multiply", what_, a.shape_string(), b.shape_string());
      out_dims = {p.m, p.n};
      return p;
    }
    if (a.rank() < 2 || b.rank() < 2)
      user_error("{}: the CUDA backend multiplies operands of rank 2 or more, got {} and {}", what_, a.shape_string(),
                 b.shape_string());
    p.k = a.dim(-1);
    p.n = b.dim(-1);
    if (b.dim(-2) != p.k) user_error("{}: A {} and B {} do not multiply", what_, a.shape_string(), b.shape_string());
    if (b.rank() == 2) {  // one weight matrix for every row of A: a single product of all rows
      p.m = a.numel() / std::max<int64_t>(1, p.k);
      if (p.k == 0) p.m = checked_numel(std::vector<int64_t>(a.shape().begin(), a.shape().end() - 1), what_);
      out_dims = a.shape();
      out_dims.back() = p.n;
      return p;
    }
    p.m = a.dim(-2);
    // Batch dims: equal, or one operand without them (rank 2: broadcast with stride 0).
    std::vector<int64_t> batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
    if (!batch_a.empty() && batch_a != batch_b)
      user_error("{}: batch dims of {} and {} differ (the CUDA backend broadcasts only a rank-2 operand)", what_,
                 a.shape_string(), b.shape_string());
    p.batch = checked_numel(batch_b, what_);
    p.batch_stride_a = batch_a.empty() ? 0 : p.m * p.k;
    p.batch_stride_b = p.k * p.n;
    out_dims = batch_b;
    out_dims.push_back(p.m);
    out_dims.push_back(p.n);
    return p;
  }

  // A constant 2-D weight whose rows of n output columns are no multiple of 16 bytes gets a padded copy
  // (not with a residual: cuBLASLt would read it as C with the padded stride).
  void pad_weight(const Graph& g, const Node& core, const Options& options, int64_t n) {
    const Value& w = g.value(core.inputs.at(1));
    const int64_t per_16_bytes = 16 / static_cast<int64_t>(dtype_size(dtype_));
    if (!options.cuda_pad_gemm_columns || !w.constant || w.constant->rank() != 2 || w.constant->dtype() != dtype_ ||
        residual_input_ >= 0 || n % per_16_bytes == 0 || (core_ != LibraryCore::matmul && core_ != LibraryCore::gemm))
      return;
    n_ = n;
    padded_n_ = (n / per_16_bytes + 1) * per_16_bytes;
    padded_b_ = runtime_.upload(pad_columns(*w.constant, trans_b_, padded_n_));
  }

  const CudaRuntime& runtime_;
  std::string what_;
  bool allow_tf32_ = false;
  DType dtype_ = DType::f32;  // of A, B, the output and the bias (bf16 / f16 accumulate in f32)
  LibraryCore core_ = LibraryCore::batched_matmul;  // a bare MatMul node
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.f;
  int residual_input_ = -1;
  bool lt_residual_ = false;  // cuBLASLt adds the residual (C, beta = 1)
  Tensor bias_;               // on the device: one per output column (padded_n_ of them when padded)
  int64_t n_ = 0, padded_n_ = 0;  // output columns, and the padded weight's (0: not padded)
  Tensor padded_b_;               // on the device
  std::optional<EpilogueLaunch> epilogue_;  // what cuBLASLt does not fuse
  MatmulPlans plans_;
  std::unique_ptr<GemmTemplateRoute> template_;  // the wgmma template, where it may run this group
  NormRowKernel norm_row_;    // a folded LayerNorm's row kernel (the unfolded path), or none
  std::unique_ptr<GemmTemplateRoute> unfolded_template_;  // the unfolded path's product on the template
  bool norm_output_ = false;  // the LayerNorm's output is the step's second output
};

}  // namespace

Tensor pad_columns(const Tensor& w, bool transposed, int64_t padded) {
  const size_t es = dtype_size(w.dtype());
  const int64_t rows = w.dim(0), cols = w.numel() / std::max<int64_t>(rows, 1);  // w as a matrix [dim 0, rest]
  Tensor out = Tensor::empty(w.dtype(), transposed ? std::vector<int64_t>{padded, cols} : std::vector<int64_t>{rows, padded});
  auto* dst = static_cast<unsigned char*>(out.raw());
  const auto* src = static_cast<const unsigned char*>(w.raw());
  std::memset(dst, 0, out.nbytes());
  if (transposed) std::memcpy(dst, src, w.nbytes());  // N rows of K, then zero rows
  else
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + size_t(r * padded) * es, src + size_t(r * cols) * es, size_t(cols) * es);
  return out;
}

bool has_library_route(const Graph& g, const LibraryGroup& group) {
  if (!is_f32_or_half(g.value(group.output).type.dtype)) return false;
  if (group.core == LibraryCore::conv) return has_conv_route(g, g.nodes[size_t(group.core_node)], &group);
  // No library softmax on the device yet.
  return group.core == LibraryCore::matmul || group.core == LibraryCore::gemm ||
         group.core == LibraryCore::batched_matmul;
}

std::unique_ptr<Kernel> make_matmul_kernel(const CudaRuntime& runtime, const Graph& g, const LibraryGroup& group,
                                           const Options& options, ModuleCache& modules) {
  if (!has_library_route(g, group)) return nullptr;  // the nodes stay with the other passes
  if (group.core == LibraryCore::conv)
    return make_conv_kernel(runtime, g, g.nodes[size_t(group.core_node)], &group, options, modules);
  return std::make_unique<MatmulKernel>(runtime, g, g.nodes[size_t(group.core_node)], &group, options, &modules);
}

std::unique_ptr<Kernel> make_bare_matmul_kernel(const CudaRuntime& runtime, const Graph& g, const Node& node,
                                                const Options& options) {
  return std::make_unique<MatmulKernel>(runtime, g, node, nullptr, options, nullptr);
}

}  // namespace kiln::backend::cuda
