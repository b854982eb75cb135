// MatMul / Gemm groups on kiln's GEMM template, chosen by the autotuner against oneDNN (see
// library_kernel.h, tune_matmul_kernel).
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>

#include <oneapi/dnnl/dnnl_version.h>

#include <climits>

#include "autotune/autotuner.h"
#include "autotune/choice_helpers.h"
#include "codegen/cpu/cpu_features.h"
#include "backend/cpu/gemm_epilogue.h"
#include "schedule/gemm_tail.h"
#include "backend/cpu/library_kernel_detail.h"
#include "kernels/blas/sgemm.h"
#include "templates/gemm/cpu/epilogue_pass.h"
#include "templates/gemm/cpu/gemm_kernel.h"

namespace kiln::backend::cpu {

using namespace schedule;
namespace {

using library_detail::constant_of;
using library_detail::KernelBase;
using library_detail::per_channel;
namespace tg = templates::gemm;

// What a MatMul / Gemm group computes, with everything static: out[rows, N] = act_after(act(alpha *
// op(A) x op(B) + bias) + residual), A [.., K] flattened to rows (Gemm: [rows, K] or, transposed, [K, rows]).
// A batched product (two computed operands) is `batch` such products, B [batch.., K, N] per call.
struct MatmulShape {
  int64_t rows = 0, n = 0, k = 0;  // symbolic rows: `rows` is the size the autotuner measures at; batched: per matrix
  int64_t batch = 1;
  bool batched = false;            // B is the group's second input, not a constant
  bool symbolic_rows = false;      // then one persistent kernel serves every M (a_dims/out_dims: [rows, K/N])
  bool trans_a = false, trans_b = false;
  float alpha = 1.f;
  std::vector<float> bias;  // N values (Gemm's beta * C folded in), or empty
  std::vector<int64_t> a_dims, b_dims, out_dims;
};

// A [b.., M, K] x B [b.., K, N] with every dim static (fuse_library makes the batch dims equal).
std::optional<MatmulShape> batched_shape(const Graph& g, const LibraryGroup& grp) {
  const Node& n = g.nodes[size_t(grp.core_node)];
  const Shape& as = g.value(n.inputs[0]).type.shape;
  const Shape& bs = g.value(n.inputs[1]).type.shape;
  if (!is_static(as) || !is_static(bs) || as.size() < 3 || as.size() != bs.size()) return std::nullopt;
  MatmulShape s;
  s.batched = true;
  s.a_dims = static_dims(as);
  s.b_dims = static_dims(bs);
  const size_t r = s.a_dims.size();
  for (size_t i = 0; i + 2 < r; ++i) {
    if (s.a_dims[i] != s.b_dims[i]) return std::nullopt;
    s.batch *= s.a_dims[i];
  }
  s.rows = s.a_dims[r - 2], s.k = s.a_dims[r - 1], s.n = s.b_dims[r - 1];
  if (s.b_dims[r - 2] != s.k) return std::nullopt;
  s.out_dims = s.a_dims;
  s.out_dims.back() = s.n;
  if (grp.bias != kNoValue) s.bias = per_channel(constant_of(g, grp.bias), s.n);
  s.alpha = grp.scale;
  if (s.batch < 1 || s.rows < 1 || s.n < 1 || s.k < 1) return std::nullopt;
  return s;
}

std::optional<MatmulShape> static_shape(const Graph& g, const LibraryGroup& grp) {
  if (grp.core == LibraryCore::batched_matmul) return batched_shape(g, grp);
  if (grp.core != LibraryCore::matmul && grp.core != LibraryCore::gemm) return std::nullopt;
  const Node& n = g.nodes[size_t(grp.core_node)];
  const Shape& as = g.value(n.inputs[0]).type.shape;
  if (as.size() < 2) return std::nullopt;
  MatmulShape s;
  if (!is_static(as)) {
    // Symbolic rows (batch x sequence): K must be known; the kernel is tuned at kSymbolicTuneRows rows.
    const bool gemm_trans_a = grp.core == LibraryCore::gemm && n.attr_int("transA", 0) != 0;
    if (gemm_trans_a || !as.back().is_static()) return std::nullopt;
    s.symbolic_rows = true;
    s.a_dims = {kSymbolicTuneRows, as.back().value};
  } else {
    s.a_dims = static_dims(as);
  }
  const Tensor& b = constant_of(g, n.inputs[1]);
  if (b.rank() != 2) return std::nullopt;
  s.trans_b = grp.core == LibraryCore::gemm && n.attr_int("transB", 0) != 0;
  s.trans_a = grp.core == LibraryCore::gemm && n.attr_int("transA", 0) != 0;
  if (s.trans_a && s.a_dims.size() != 2) return std::nullopt;
  s.k = b.dim(s.trans_b ? 1 : 0);
  s.n = b.dim(s.trans_b ? 0 : 1);
  s.rows = s.trans_a ? s.a_dims[1] : checked_numel(s.a_dims, "matmul rows") / std::max<int64_t>(1, s.a_dims.back());
  if (grp.core == LibraryCore::gemm) {
    s.alpha = static_cast<float>(n.attr_float("alpha", 1.0));
    if (n.has_input(2)) {
      s.bias = per_channel(constant_of(g, n.inputs[2]), s.n);
      for (float& x : s.bias) x = static_cast<float>(n.attr_float("beta", 1.0)) * x;
    }
    s.out_dims = {s.rows, s.n};
  } else {
    s.out_dims = s.a_dims;
    s.out_dims.back() = s.n;
    s.alpha = grp.scale;
  }
  if (s.symbolic_rows && s.a_dims.back() != s.k) return std::nullopt;
  if (grp.bias != kNoValue) s.bias = per_channel(constant_of(g, grp.bias), s.n);
  if (s.rows < 1 || s.n < 1 || s.k < 1) return std::nullopt;
  return s;
}

tg::GemmSpec template_spec(const Graph& g, const MatmulShape& s, const LibraryGroup& grp) {
  tg::GemmSpec spec;
  tg::GemmProblem& p = spec.problem;
  p.m = s.symbolic_rows ? -1 : s.rows, p.n = s.n, p.k = s.k;
  p.batch = s.batch;
  p.trans_a = s.trans_a, p.trans_b = s.trans_b;
  p.b_constant = !s.batched;
  p.alpha = s.alpha;
  if (!s.bias.empty()) p.bias = tg::GemmProblem::Bias::row;
  // The residual is extra input x0, the tail's operands follow (group_epilogue_cpp names them so).
  spec.epilogue.extra_inputs.assign((grp.residual >= 0 ? 1 : 0) + grp.tail_inputs.size(), DType::f32);
  spec.epilogue.body = group_epilogue_cpp(g, grp, s.batched);
  return spec;
}

// Where the epilogue's extra inputs come from: the residual (if any), then the tail's operands, each
// an index into the group's inputs and whether it holds one value per column.
struct ExtraInputs {
  std::vector<std::pair<int, bool>> sources;

  ExtraInputs(const Graph& g, const LibraryGroup& grp) {
    if (grp.residual >= 0) sources.push_back({grp.residual, false});
    for (int i : grp.tail_inputs) sources.push_back({i, tail_operand_per_column(g, grp.inputs[size_t(i)])});
  }

  // The pointers, each checked: a full operand must have the output's f32 shape. Empty string: fine.
  std::string collect(const std::vector<const Tensor*>& in, const std::vector<int64_t>& out_dims,
                      std::vector<const void*>& out) const {
    out.clear();
    for (auto [index, per_column] : sources) {
      const Tensor* t = in.at(size_t(index));
      if (!t || t->dtype() != DType::f32 || (!per_column && t->shape() != out_dims))
        return fmt::format("an epilogue operand has shape {}, the output {}", t ? t->shape_string() : "?",
                           library_detail::dims_string(out_dims));
      out.push_back(t->raw());
    }
    return {};
  }
};

// C = the group's result, given bias (or null), A, B (a constant's own data, or the batched operand),
// the rows of A and the extra epilogue inputs (the residual, or null).
using GemmCompute = std::function<void(const float* bias, const float* a, const float* b, float* c, int64_t rows,
                                       const void* const* extra)>;

// The group on one of kiln's GEMM candidates: a template kernel (weights packed once, epilogue in its
// store hook) or a library product followed by the epilogue pass. Checks shapes and makes the output.
class GemmGroupKernel final : public KernelBase {
 public:
  GemmGroupKernel(const Graph& g, const LibraryGroup& grp, MatmulShape shape, GemmCompute compute)
      : KernelBase(g, grp), s_(std::move(shape)), compute_(std::move(compute)), extras_(g, grp) {
    if (!s_.batched) constant_b_ = constant_of(g, g.nodes[size_t(grp.core_node)].inputs[1]).data<float>();
  }

  Tensor run_into(const std::vector<const Tensor*>& in, int64_t max_bytes, Tensor planned) const override {
    const Tensor& a = *in.at(0);
    std::vector<int64_t> out_dims = s_.out_dims;
    int64_t rows = s_.rows;
    if (s_.symbolic_rows) {  // any rows of K columns: [.., K] -> [.., N]
      if (a.dtype() != DType::f32 || a.rank() < 2 || a.dim(-1) != s_.k)
        fail("A is {} {}, K is {}", dtype_name(a.dtype()), a.shape_string(), s_.k);
      out_dims = a.shape();
      out_dims.back() = s_.n;
      rows = a.numel() / s_.k;
    } else if (a.dtype() != DType::f32 || a.shape() != s_.a_dims) {
      fail("A is {} {}, the kernel was built for f32 {}", dtype_name(a.dtype()), a.shape_string(),
           library_detail::dims_string(s_.a_dims));
    }
    const float* b = constant_b_;
    if (s_.batched) {
      const Tensor& bt = *in.at(1);
      if (bt.dtype() != DType::f32 || bt.shape() != s_.b_dims)
        fail("B is {} {}, the kernel was built for f32 {}", dtype_name(bt.dtype()), bt.shape_string(),
             library_detail::dims_string(s_.b_dims));
      b = bt.data<float>();
    }
    std::vector<const void*> extra;
    if (std::string why = extras_.collect(in, out_dims, extra); !why.empty()) fail("{}", why);
    Tensor out = allocate(out_dims, max_bytes, planned);
    if (rows == 0) return out;
    compute_(s_.bias.empty() ? nullptr : s_.bias.data(), a.data<float>(), b, out.data<float>(), rows, extra.data());
    return out;
  }

 private:
  MatmulShape s_;
  GemmCompute compute_;
  ExtraInputs extras_;
  const float* constant_b_ = nullptr;  // the graph's weights (the graph outlives the session's kernels)
};

// OpenBLAS's product, then the epilogue (bias, activations, residual) as a separate generated pass.
GemmCompute blas_compute(const MatmulShape& s, const tg::GemmSpec& spec, const Options& options) {
  std::optional<tg::EpiloguePass> pass;
  if (tg::has_epilogue_pass(spec.problem, spec.epilogue)) pass = tg::EpiloguePass::compile(spec.problem, spec.epilogue, options);
  return [s, pass](const float* bias, const float* a, const float* b, float* c, int64_t rows, const void* const* extra) {
    blas::SgemmCall call;
    call.trans_a = s.trans_a, call.trans_b = s.trans_b;
    call.batch = s.batch, call.m = rows, call.n = s.n, call.k = s.k;
    call.alpha = s.alpha;
    call.a = a, call.b = b, call.c = c;
    call.stride_a = rows * s.k, call.stride_b = s.batched ? s.k * s.n : 0, call.stride_c = rows * s.n;
    blas::sgemm(call);
    if (pass) pass->run(bias, c, rows, extra);
  };
}

// oneDNN's call (product and post-ops), then the group's tail as a generated pass over its output.
class LibraryWithTail final : public KernelBase {
 public:
  LibraryWithTail(const Graph& g, const LibraryGroup& grp, std::shared_ptr<LibraryKernel> library, int64_t n,
                  const Options& options)
      : KernelBase(g, grp), library_(std::move(library)), extras_(g, grp), n_(n) {
    tg::GemmProblem p;
    p.m = -1, p.n = n;  // every row of the output as one matrix
    tg::GemmEpilogue e;
    const int first_tail = grp.residual >= 0 ? 1 : 0;
    e.extra_inputs.assign(size_t(first_tail) + grp.tail_inputs.size(), DType::f32);
    e.body = tail_cpp(g, grp, first_tail);
    pass_ = tg::EpiloguePass::compile(p, e, options);
  }

  Tensor run_into(const std::vector<const Tensor*>& in, int64_t max_bytes, Tensor planned) const override {
    Tensor out = library_->run(in, max_bytes, std::move(planned));
    std::vector<const void*> extra;
    if (std::string why = extras_.collect(in, out.shape(), extra); !why.empty()) fail("{}", why);
    if (out.numel() > 0) pass_.run(nullptr, out.data<float>(), out.numel() / n_, extra.data());
    return out;
  }

 private:
  std::shared_ptr<LibraryKernel> library_;
  ExtraInputs extras_;
  int64_t n_;
  tg::EpiloguePass pass_;
};

bool fits_blas(const MatmulShape& s) {
  blas::SgemmCall call;
  call.batch = s.batch, call.m = s.symbolic_rows ? INT_MAX : s.rows, call.n = s.n, call.k = s.k;
  return blas::fits(call);
}

// Benchmark operands of a group: random A and residual, the graph's constants; and fp64 rows to check:
// `want` from the f32 operands, `want_bf16` (bf16 products only) from the operands rounded to bf16, what
// a product that reads bf16 operands and sums in f32 must match as closely as an f32 one matches `want`.
struct Bench {
  std::vector<Tensor> owned;
  std::vector<const Tensor*> inputs;
  std::vector<int64_t> rows;
  std::vector<double> want, want_bf16;

  Bench(const Graph& g, const LibraryGroup& grp, const MatmulShape& s, bool bf16) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    owned.reserve(grp.inputs.size());
    for (size_t i = 0; i < grp.inputs.size(); ++i) {
      const auto& c = g.value(grp.inputs[i]).constant;
      if (c) {
        inputs.push_back(c.get());
        continue;
      }
      // A, the batched B, or an operand of the output's shape (residual, tail)
      const std::vector<int64_t>& dims = i == 0 ? s.a_dims : i == 1 && s.batched ? s.b_dims : s.out_dims;
      owned.push_back(Tensor::empty(DType::f32, dims));
      for (int64_t j = 0; j < owned.back().numel(); ++j) owned.back().data<float>()[j] = d(rng);
      inputs.push_back(&owned.back());
    }
    const float* a = inputs[0]->data<float>();
    const float* b_all = inputs[1]->data<float>();
    const float* res = grp.residual >= 0 ? inputs[size_t(grp.residual)]->data<float>() : nullptr;
    const int64_t all_rows = s.batch * s.rows;  // rows of every matrix, one after another
    const loops::ScalarExpr epilogue = epilogue_expr(g, grp);
    std::vector<double> loads(1 + (res ? 1 : 0) + grp.tail_inputs.size());
    std::vector<const float*> tail_data;  // each operand, and whether it holds one value per column
    std::vector<bool> tail_per_column;
    for (int i : grp.tail_inputs) {
      tail_data.push_back(inputs[size_t(i)]->data<float>());
      tail_per_column.push_back(tail_operand_per_column(g, grp.inputs[size_t(i)]));
    }
    for (int64_t r : {int64_t{0}, all_rows / 2, all_rows - 1})
      if (rows.empty() || rows.back() != r) rows.push_back(r);
    // The fp64 rows from the operands as they are, or rounded to bf16 first.
    auto reference = [&](bool rounded) {
      auto operand = [rounded](float x) { return double(rounded ? bf16_to_float(float_to_bf16(x)) : x); };
      std::vector<double> out;
      for (int64_t r : rows)
        for (int64_t j = 0; j < s.n; ++j) {
          const float* b = b_all + (s.batched ? (r / s.rows) * s.k * s.n : 0);
          double acc = 0;
          for (int64_t q = 0; q < s.k; ++q)
            acc += operand(a[s.trans_a ? q * s.rows + r : r * s.k + q]) * operand(b[s.trans_b ? j * s.k + q : q * s.n + j]);
          size_t load = 0;
          loads[load++] = s.alpha * acc + (s.bias.empty() ? 0.0 : s.bias[size_t(j)]);
          if (res) loads[load++] = res[r * s.n + j];
          for (size_t t = 0; t < tail_data.size(); ++t) loads[load++] = tail_data[t][tail_per_column[t] ? j : r * s.n + j];
          out.push_back(expr_fp64(epilogue, loads));
        }
      return out;
    };
    want = reference(false);
    if (bf16) want_bf16 = reference(true);
  }

  // `of_bf16`: the candidate reads bf16 operands.
  bool check(const Tensor& out, const MatmulShape& s, bool of_bf16, std::string& why) const {
    std::vector<float> got;
    for (int64_t r : rows) got.insert(got.end(), out.data<float>() + r * s.n, out.data<float>() + (r + 1) * s.n);
    const std::vector<double>& reference = of_bf16 ? want_bf16 : want;
    KILN_INTERNAL_CHECK(reference.size() == got.size(), "GEMM tuning: no {} reference", of_bf16 ? "bf16" : "f32");
    return autotune::outputs_match(got.data(), reference.data(), got.size(),
                                   {2e-6 * double(s.k) * std::fabs(s.alpha) + 1e-5, 1e-4}, why);
  }
};

}  // namespace

std::string gemm_library_versions() {
  return fmt::format("onednn {}.{}.{}; {}", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, DNNL_VERSION_PATCH, blas::version());
}

bool worth_tuning(const Graph& g, const LibraryGroup& grp, const Options& options) {
  const std::vector<std::string> backends = autotune::gemm_backends(options);
  auto has = [&](const char* b) { return std::find(backends.begin(), backends.end(), b) != backends.end(); };
  if (!has("template") && !has("blas")) return false;  // oneDNN alone: nothing to choose
  std::optional<MatmulShape> shape = static_shape(g, grp);
  return shape && double(shape->batch) * double(shape->rows) * double(shape->n) * double(shape->k) >= kTuneMinMacs;
}

std::unique_ptr<LibraryKernel> tune_matmul_kernel(const Graph& g, const LibraryGroup& grp, const Options& options,
                                                  autotune::Autotuner& tuner, const std::string& device_key,
                                                  LibraryFactory make_library) {
  KILN_INTERNAL_CHECK(grp.tuned && make_library, "tune_matmul_kernel: group '{}' is not tuned", grp.label);
  const std::vector<std::string> backends = autotune::gemm_backends(options);
  auto has = [&](const char* b) { return std::find(backends.begin(), backends.end(), b) != backends.end(); };
  std::optional<MatmulShape> shape = static_shape(g, grp);
  KILN_INTERNAL_CHECK(shape, "GEMM group '{}' is marked tuned but has no static shape", grp.label);
  // Made on first use: a stored winner needs no benchmark operands and no reference.
  struct LazyBench {
    const Graph& g;
    const LibraryGroup& grp;
    MatmulShape shape;
    bool bf16;
    std::unique_ptr<Bench> made;
    Bench& get() {
      if (!made) made = std::make_unique<Bench>(g, grp, shape, bf16);
      return *made;
    }
  };
  const bool bf16 = bf16_products(options);  // the oneDNN candidate reads bf16 operands; the others f32
  auto bench = std::make_shared<LazyBench>(LazyBench{g, grp, *shape, bf16, nullptr});
  autotune::TuneRequest req;
  req.op_signature = grp.label + (shape->trans_a ? " transA" : "") + (shape->trans_b ? " transB" : "");
  req.shape_key = shape->symbolic_rows ? fmt::format("M=symbolic (timed at {}),N={},K={}", shape->rows, shape->n, shape->k)
                                       : fmt::format("M={},N={},K={}", shape->rows, shape->n, shape->k);
  if (shape->batched) req.shape_key = fmt::format("batch={},{}", shape->batch, req.shape_key);
  req.dtype = bf16 ? "f32, bf16 products" : "f32";
  req.device_key = device_key;
  req.library_versions = gemm_library_versions();
  req.settings_key = autotune::gemm_settings_key(options);
  // Each candidate fills its slot when prepared; the winner's slot becomes the group's kernel.
  using Slot = std::shared_ptr<std::shared_ptr<LibraryKernel>>;
  std::vector<Slot> slots;
  auto choice = [&](std::string name, std::function<void()> prepare, Slot slot, bool of_bf16 = false) {
    slots.push_back(slot);
    req.choices.push_back(autotune::make_choice(
        {std::move(name), std::move(prepare), [slot, bench] { (*slot)->run(bench->get().inputs, INT64_MAX); },
         [slot, bench, s = *shape, of_bf16](std::string& why) {
           Bench& b = bench->get();
           return b.check((*slot)->run(b.inputs, INT64_MAX), s, of_bf16, why);
         }}));
  };
  if (has("onednn")) {  // the tail, if any, as a pass after oneDNN's call
    auto slot = std::make_shared<std::shared_ptr<LibraryKernel>>();
    choice("onednn", [slot, make_library, &g, &grp, &options, n = shape->n] {
      std::shared_ptr<LibraryKernel> lib = make_library();
      *slot = grp.tail.empty() ? lib : std::make_shared<LibraryWithTail>(g, grp, lib, n, options);
    }, slot, bf16);
  }
  const tg::GemmSpec base = template_spec(g, *shape, grp);
  if (has("blas") && fits_blas(*shape)) {
    auto slot = std::make_shared<std::shared_ptr<LibraryKernel>>();
    choice("blas", [slot, base, &g, &grp, &options, s = *shape] {
      *slot = std::make_shared<GemmGroupKernel>(g, grp, s, blas_compute(s, base, options));
    }, slot);
  }
  const bool exhaustive = tuner.mode() == autotune::TuneMode::max;
  if (has("template"))
    for (const tg::GemmConfig& config : tg::config_space(base.problem, codegen::cpu::detect_cpu_features(), exhaustive,
                                                                 tg::has_store_hook(base.problem, base.epilogue))) {
      auto slot = std::make_shared<std::shared_ptr<LibraryKernel>>();
      tg::GemmSpec spec = base;
      spec.config = config;
      choice(
          "template:" + config.name(),
          [slot, spec, &g, &grp, &options, s = *shape] {
            auto kernel = std::make_shared<tg::GemmKernel>(std::move(tg::GemmKernel::compile({spec}, options)[0]));
            if (!s.batched) kernel->set_constant_b(constant_of(g, g.nodes[size_t(grp.core_node)].inputs[1]).data<float>());
            *slot = std::make_shared<GemmGroupKernel>(
                g, grp, s, [kernel](const float* bias, const float* a, const float* b, float* c, int64_t rows,
                                    const void* const* extra) { kernel->run(bias, a, b, c, rows, extra); });
          },
          slot);
    }
  autotune::TuneResult r = tuner.tune(req);  // the winner is prepared, a stored one too
  const std::shared_ptr<LibraryKernel>& winner = *slots.at(size_t(r.winner_index));
  if (!winner) internal_error("autotune picked '{}', which did not build", r.winner);
  return std::make_unique<SharedLibraryKernel>(winner);
}

std::optional<codegen::cpu::KernelSource> gemm_template_source(const Graph& g, const LibraryGroup& grp,
                                                               const codegen::cpu::CpuFeatures& features) {
  if (!grp.tuned) return std::nullopt;
  std::optional<MatmulShape> shape = static_shape(g, grp);
  KILN_INTERNAL_CHECK(shape, "GEMM group '{}' is marked tuned but has no static shape", grp.label);
  const tg::GemmSpec spec = template_spec(g, *shape, grp);
  const tg::GemmConfig config =
      tg::config_space(spec.problem, features, false, tg::has_store_hook(spec.problem, spec.epilogue)).at(0);
  codegen::cpu::KernelSource source = tg::emit_gemm(spec.problem, config, spec.epilogue, features);
  // A stable, readable name: what the group computes, its sizes and the config.
  source.name = fmt::format("{}_m{}_n{}_k{}_b{}{}{}_{}", grp.label, spec.problem.m, spec.problem.n, spec.problem.k,
                            spec.problem.batch, spec.problem.trans_a ? "_ta" : "", spec.problem.trans_b ? "_tb" : "",
                            config.name());
  return source;
}

}  // namespace kiln::backend::cpu
