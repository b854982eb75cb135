// Matmul with a fused epilogue. Constant weights: the primitive is created with weights in format
// `any`, and the constant is reordered into the chosen layout once (PrepackedWeights), so every call
// reads the packed copy. Primitives are cached per shape, strides and epilogue steps. bf16 operands:
// the constant weights are packed as bf16 once, the activations (and per-call weights) rounded into a
// contiguous bf16 copy on each call by a reorder.
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>

#include "kernels/onednn/fused_detail.h"
#include "support/error.h"

namespace kiln::onednn {

using namespace detail;

namespace {

using dt = dnnl::memory::data_type;

struct MatmulEntry {
  bool implemented = false;
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md, scratch_md;  // the primitive's
  dnnl::memory::desc user_a_md, user_b_md;           // the caller's f32 operands (per-call B only)
  std::optional<PlannedReorder> a_in, b_in;          // to bf16, where the operands are
  PostOpPlan plan;
  std::shared_ptr<const dnnl::memory> weights;  // constant weights in b_md's layout
  bool single_threaded = false;                 // splits_reduction_across_threads
};

}  // namespace

struct FusedMatmul::Impl {
  Epilogue epilogue;
  Operands operands = Operands::f32;
  int64_t K = 0, N = 0;
  std::unique_ptr<PrepackedWeights> weights;  // null: weights per call
  PrimitiveCache<MatmulEntry> cache;

  Key key(const Call& c) const {
    const MatmulDesc& d = c.desc;
    Key k{101, c.steps, static_cast<int64_t>(d.c_dims.size())};
    for (const auto* v : {&d.a_dims, &d.a_strides, &d.c_dims}) k.insert(k.end(), v->begin(), v->end());
    if (!weights)
      for (const auto* v : {&d.b_dims, &d.b_strides}) k.insert(k.end(), v->begin(), v->end());
    return k;
  }

  void check(const Call& c) const {
    const MatmulDesc& d = c.desc;
    size_t rank = d.c_dims.size();
    KILN_INTERNAL_CHECK(rank >= 2 && rank <= DNNL_MAX_NDIMS && d.a_dims.size() == rank && d.a_strides.size() == rank,
                        "FusedMatmul: bad rank {}", rank);
    KILN_INTERNAL_CHECK(c.steps >= 0 && c.steps <= kNumEpilogueSteps, "FusedMatmul: bad steps {}", c.steps);
    if (weights)
      KILN_INTERNAL_CHECK(rank == 2 && d.a_dims[1] == K && d.c_dims[1] == N, "FusedMatmul: constant weights [{},{}]",
                          K, N);
    else
      KILN_INTERNAL_CHECK(d.b_dims.size() == rank && d.b_strides.size() == rank, "FusedMatmul: bad weights rank");
    if (!epilogue.bias.empty())
      KILN_INTERNAL_CHECK(static_cast<int64_t>(epilogue.bias.size()) == d.c_dims.back(), "FusedMatmul: bias size");
  }

  std::shared_ptr<const MatmulEntry> make(const Call& c) const {
    const MatmulDesc& d = c.desc;
    auto e = std::make_shared<MatmulEntry>();
    const bool bf16 = operands == Operands::bf16;
    const dt op = operand_type(operands);
    e->user_a_md = dnnl::memory::desc(to_dims(d.a_dims), dt::f32, to_dims(d.a_strides));
    e->a_md = bf16 ? dnnl::memory::desc(to_dims(d.a_dims), op, row_major_strides(d.a_dims)) : e->user_a_md;
    e->c_md = dnnl::memory::desc(to_dims(d.c_dims), dt::f32, row_major_strides(d.c_dims));
    if (!weights) e->user_b_md = dnnl::memory::desc(to_dims(d.b_dims), dt::f32, to_dims(d.b_strides));
    dnnl::memory::desc b_request =
        weights ? dnnl::memory::desc({K, N}, op, dnnl::memory::format_tag::any)
        : bf16  ? dnnl::memory::desc(to_dims(d.b_dims), op, row_major_strides(d.b_dims))
                : e->user_b_md;
    int rank = static_cast<int>(d.c_dims.size());
    e->plan = plan_post_ops(epilogue, c.steps, e->c_md, rank - 1, /*residual_as_sum=*/false);
    try {
      dnnl::matmul::desc desc = e->plan.native_bias ? dnnl::matmul::desc(e->a_md, b_request, e->plan.bias_md, e->c_md)
                                                    : dnnl::matmul::desc(e->a_md, b_request, e->c_md);
      dnnl::matmul::primitive_desc pd(desc, e->plan.attr, cpu_engine());
      e->b_md = pd.weights_desc();
      e->scratch_md = pd.scratchpad_desc();
      e->single_threaded = splits_reduction_across_threads(pd);
      e->prim = dnnl::matmul(pd);
      if (weights) e->weights = weights->get(e->b_md);
      if (bf16) {
        e->a_in.emplace(e->user_a_md, e->a_md);
        if (!weights) e->b_in.emplace(e->user_b_md, e->b_md);
      }
      e->implemented = true;
    } catch (const dnnl::error& err) {
      if (err.status != dnnl_unimplemented) throw;
    }
    return e;
  }

  std::shared_ptr<const MatmulEntry> entry(const Call& c) {
    check(c);
    return cache.get(key(c), [&] { return make(c); });
  }
};

FusedMatmul::FusedMatmul(int64_t K, int64_t N, std::vector<int64_t> b_strides, std::shared_ptr<const void> owner,
                         const float* b, Epilogue epilogue, Operands operands)
    : impl_(std::make_unique<Impl>()) {
  KILN_INTERNAL_CHECK(K >= 1 && N >= 1 && b_strides.size() == 2, "FusedMatmul: weights [{},{}]", K, N);
  impl_->epilogue = std::move(epilogue);
  impl_->operands = operands;
  impl_->K = K;
  impl_->N = N;
  dnnl::memory::desc user({K, N}, dt::f32, to_dims(b_strides));
  impl_->weights = std::make_unique<PrepackedWeights>(user, std::move(owner), b);
}

FusedMatmul::FusedMatmul(Epilogue epilogue, Operands operands) : impl_(std::make_unique<Impl>()) {
  impl_->epilogue = std::move(epilogue);
  impl_->operands = operands;
}

FusedMatmul::~FusedMatmul() = default;

const Epilogue& FusedMatmul::epilogue() const { return impl_->epilogue; }

bool FusedMatmul::prepare(const Call& shape_only) const { return impl_->entry(shape_only)->implemented; }

bool FusedMatmul::run(const Call& c) const {
  auto e = impl_->entry(c);
  if (!e->implemented) return false;
  const Epilogue& ep = impl_->epilogue;
  if (ep.residual && c.steps > kStepResidual)
    KILN_INTERNAL_CHECK(c.residual != nullptr, "FusedMatmul: residual missing");
  const dnnl::engine& eng = cpu_engine();
  dnnl::memory a(e->user_a_md, eng, const_cast<float*>(c.a));
  if (e->a_in) a = e->a_in->into_thread_buffer(a, 0);
  dnnl::memory b = e->weights ? *e->weights : dnnl::memory(e->user_b_md, eng, const_cast<float*>(c.b));
  if (e->b_in) b = e->b_in->into_thread_buffer(b, 1);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a},
                                             {DNNL_ARG_WEIGHTS, b},
                                             {DNNL_ARG_DST, dnnl::memory(e->c_md, eng, c.c)},
                                             {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}};
  if (e->plan.native_bias || e->plan.bias_arg) {
    dnnl::memory bias(e->plan.bias_md, eng, const_cast<float*>(ep.bias.data()));
    args.emplace(e->plan.native_bias ? DNNL_ARG_BIAS : e->plan.bias_arg, bias);
  }
  if (e->plan.residual_arg)
    args.emplace(e->plan.residual_arg, dnnl::memory(e->c_md, eng, const_cast<float*>(c.residual)));
  execute_primitive(e->prim, e->single_threaded, args);
  return true;
}

bool has_native_bf16_matmul() {
  static const bool native = [] {
    try {
      dnnl::memory::desc a({4, 64}, dt::bf16, dnnl::memory::format_tag::ab);
      dnnl::memory::desc b({64, 16}, dt::bf16, dnnl::memory::format_tag::any);
      dnnl::memory::desc c({4, 16}, dt::f32, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), user_scratchpad_attr(), cpu_engine());
      const std::string implementation = pd.impl_info_str();
      return implementation.find("bf16") != std::string::npos || implementation.find("amx") != std::string::npos;
    } catch (const dnnl::error&) {  // no bf16 kernel here is a no, never a failed compile
      return false;
    }
  }();
  return native;
}

}  // namespace kiln::onednn
