// Matmul with a fused epilogue. Constant weights: the primitive is created with weights in format
// `any`, and the constant is reordered into the chosen layout once (PrepackedWeights), so every call
// reads the packed copy. Primitives are cached per shape, strides and epilogue steps.
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/onednn/fused_detail.h"
#include "support/error.h"

namespace kiln::onednn {

using namespace detail;

namespace {

using dt = dnnl::memory::data_type;

struct MatmulEntry {
  bool implemented = false;
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md, scratch_md;
  PostOpPlan plan;
  std::shared_ptr<const dnnl::memory> weights;  // constant weights in b_md's layout
  bool single_threaded = false;                 // splits_reduction_across_threads
};

}  // namespace

struct FusedMatmul::Impl {
  Epilogue epilogue;
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
    e->a_md = dnnl::memory::desc(to_dims(d.a_dims), dt::f32, to_dims(d.a_strides));
    e->c_md = dnnl::memory::desc(to_dims(d.c_dims), dt::f32, row_major_strides(d.c_dims));
    dnnl::memory::desc b_request =
        weights ? dnnl::memory::desc({K, N}, dt::f32, dnnl::memory::format_tag::any)
                : dnnl::memory::desc(to_dims(d.b_dims), dt::f32, to_dims(d.b_strides));
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
                         const float* b, Epilogue epilogue)
    : impl_(std::make_unique<Impl>()) {
  KILN_INTERNAL_CHECK(K >= 1 && N >= 1 && b_strides.size() == 2, "FusedMatmul: weights [{},{}]", K, N);
  impl_->epilogue = std::move(epilogue);
  impl_->K = K;
  impl_->N = N;
  dnnl::memory::desc user({K, N}, dt::f32, to_dims(b_strides));
  impl_->weights = std::make_unique<PrepackedWeights>(user, std::move(owner), b);
}

FusedMatmul::FusedMatmul(Epilogue epilogue) : impl_(std::make_unique<Impl>()) {
  impl_->epilogue = std::move(epilogue);
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
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(e->a_md, eng, const_cast<float*>(c.a))},
      {DNNL_ARG_DST, dnnl::memory(e->c_md, eng, c.c)},
      {DNNL_ARG_SCRATCHPAD, thread_scratchpad(e->scratch_md)}};
  args.emplace(DNNL_ARG_WEIGHTS, e->weights ? *e->weights : dnnl::memory(e->b_md, eng, const_cast<float*>(c.b)));
  if (e->plan.native_bias || e->plan.bias_arg) {
    dnnl::memory bias(e->plan.bias_md, eng, const_cast<float*>(ep.bias.data()));
    args.emplace(e->plan.native_bias ? DNNL_ARG_BIAS : e->plan.bias_arg, bias);
  }
  if (e->plan.residual_arg)
    args.emplace(e->plan.residual_arg, dnnl::memory(e->c_md, eng, const_cast<float*>(c.residual)));
  execute_primitive(e->prim, e->single_threaded, args);
  return true;
}

}  // namespace kiln::onednn
