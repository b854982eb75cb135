// LtMatmul (cublaslt.h): the per-context cuBLASLt handle, the descriptors, the heuristic's algorithms and
// the launch.
#include "backend/cuda/cublaslt.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/ranges.h>

#include "support/error.h"

namespace kiln::backend::cuda {
namespace {


cudaDataType_t data_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    default: return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

std::string_view compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    default: return "CUBLAS_COMPUTE_32F";
  }
}

// What the heuristic is asked with, best first. Plain 32F is IEEE fp32 as long as no fast mode is
// named; PEDANTIC also rules out emulation (BF16x9 on newer GPUs, CUBLAS_EMULATION_STRATEGY).
std::vector<cublasComputeType_t> compute_candidates(const GemmProblem& p) {
  if (p.dtype != DType::f32) return {CUBLAS_COMPUTE_32F};
  if (p.allow_tf32) return {CUBLAS_COMPUTE_32F_FAST_TF32};
  return {CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F};
}

std::string layout_text(const LtLayout& l) {
  return fmt::format("{}x{} ld {} stride {}", l.rows, l.cols, l.ld, l.batch_stride);
}

// cuBLASLt takes descriptors by non-const pointer but only reads them in the heuristic and the matmul.
template <class T>
T* mutable_ptr(const T& t) {
  return const_cast<T*>(&t);
}

const void* device_ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(p)); }

template <class T>
void set_operation(cublasLtMatmulDescOpaque_t& op, cublasLtMatmulDescAttributes_t attribute, const T& value,
                   std::string_view what) {
  check_cublas(cublaslt().cublasLtMatmulDescSetAttribute(&op, attribute, &value, sizeof value),
               fmt::format("cublasLtMatmulDescSetAttribute({})", what));
}

// One cuBLASLt handle per device's primary context, shared by every LtMatmul on it and destroyed (with
// the context current) when the last of them goes; it keeps the context retained while it lives.
struct SharedHandle {
  Context context;
  cublasLtHandle_t handle = nullptr;
  explicit SharedHandle(const Context& c) : context(c) {}
  ~SharedHandle() {
    if (handle && context.try_make_current()) cublaslt().cublasLtDestroy(handle);
  }
  SharedHandle(const SharedHandle&) = delete;
  SharedHandle& operator=(const SharedHandle&) = delete;
};

std::shared_ptr<const SharedHandle> handle_for(const Context& context) {
  struct Registry {
    std::mutex mutex;
    std::map<int, std::weak_ptr<const SharedHandle>> handles;  // by device: each has one primary context
  };
  static Registry* const registry = new Registry;  // never destroyed: an LtMatmul may outlive static teardown
  std::lock_guard lock(registry->mutex);
  std::weak_ptr<const SharedHandle>& slot = registry->handles[context.device().index];
  if (auto live = slot.lock()) return live;
  auto made = std::make_shared<SharedHandle>(context);
  context.make_current();
  check_cublas(cublaslt().cublasLtCreate(&made->handle),
               fmt::format("cublasLtCreate (on {})", context.device().summary()));
  slot = made;
  return made;
}

class Preference {  // a cublasLtMatmulPreference_t, destroyed on every path out of the constructor
 public:
  Preference() { check_cublas(cublaslt().cublasLtMatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate"); }
  ~Preference() { cublaslt().cublasLtMatmulPreferenceDestroy(pref_); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  template <class T>
  void set(cublasLtMatmulPreferenceAttributes_t attribute, T value, std::string_view what) {
    check_cublas(cublaslt().cublasLtMatmulPreferenceSetAttribute(pref_, attribute, &value, sizeof value),
                 fmt::format("cublasLtMatmulPreferenceSetAttribute({})", what));
  }
  cublasLtMatmulPreference_t get() const { return pref_; }

 private:
  cublasLtMatmulPreference_t pref_ = nullptr;
};

}  // namespace

// ---- LtMatmul ----

struct LtMatmul::Plan {
  GemmProblem problem;
  LtShape shape;
  bool empty = false;
  int device = -1;
  std::string device_summary;
  std::shared_ptr<const SharedHandle> handle;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  // Initialised in place (cublasLtMatrixLayoutInit): a Plan lives on the heap and never moves.
  cublasLtMatrixLayoutOpaque_t first{}, second{}, c{}, d{};
  std::vector<cublasLtMatmulHeuristicResult_t> results;

  void init_layout(cublasLtMatrixLayoutOpaque_t& storage, const LtLayout& l, std::string_view name) const {
    const CublasLtApi& api = cublaslt();
    std::string what = fmt::format("{} {}", name, layout_text(l));
    check_cublas(api.cublasLtMatrixLayoutInit_internal(&storage, sizeof storage, data_type(problem.dtype),
                                                       static_cast<uint64_t>(l.rows), static_cast<uint64_t>(l.cols),
                                                       l.ld),
                 fmt::format("cublasLtMatrixLayoutInit({})", what));
    if (shape.batch == 1) return;
    int32_t count = static_cast<int32_t>(shape.batch);
    int64_t stride = l.batch_stride;
    check_cublas(api.cublasLtMatrixLayoutSetAttribute(&storage, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                 fmt::format("cublasLtMatrixLayoutSetAttribute(batch count, {})", what));
    check_cublas(api.cublasLtMatrixLayoutSetAttribute(&storage, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                      sizeof stride),
                 fmt::format("cublasLtMatrixLayoutSetAttribute(batch stride, {})", what));
  }

  // The operation descriptor, in the caller's storage (run() makes one per call: the bias pointer is
  // part of it, and calls on several threads must not share one being written).
  void init_operation(cublasLtMatmulDescOpaque_t& op, cublasComputeType_t type, const void* bias) const {
    check_cublas(cublaslt().cublasLtMatmulDescInit_internal(&op, sizeof op, type, CUDA_R_32F),
                 fmt::format("cublasLtMatmulDescInit({})", compute_name(type)));
    int32_t trans_first = shape.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t trans_second = shape.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_operation(op, CUBLASLT_MATMUL_DESC_TRANSA, trans_first, "TRANSA");
    set_operation(op, CUBLASLT_MATMUL_DESC_TRANSB, trans_second, "TRANSB");
    if (problem.epilogue == GemmEpilogue::none) return;
    uint32_t epilogue = lt_epilogue(problem.epilogue);
    set_operation(op, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE");
    if (!adds_bias(problem.epilogue)) return;
    int32_t bias_type = data_type(problem.dtype);
    int64_t bias_stride = 0;  // one bias for every batch
    set_operation(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "BIAS_DATA_TYPE");
    set_operation(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "BIAS_POINTER");
    set_operation(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_stride, "BIAS_BATCH_STRIDE");
  }

  // The heuristic's algorithms for `type`; empty (with the status in `why`) when it has none.
  std::vector<cublasLtMatmulHeuristicResult_t> ask_heuristic(cublasComputeType_t type, int max_algorithms,
                                                             size_t workspace_limit, std::string& why,
                                                             cublasStatus_t& status) const {
    // The heuristic reads the bias pointer's value only for its alignment: one with exactly the promised one.
    const void* aligned_bias = reinterpret_cast<const void*>(static_cast<uintptr_t>(problem.pointer_alignment));
    cublasLtMatmulDescOpaque_t op;
    init_operation(op, type, aligned_bias);
    Preference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(workspace_limit), "MAX_WORKSPACE_BYTES");
    uint32_t alignment = problem.pointer_alignment;
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment, "MIN_ALIGNMENT_A_BYTES");
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment, "MIN_ALIGNMENT_B_BYTES");
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment, "MIN_ALIGNMENT_C_BYTES");
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment, "MIN_ALIGNMENT_D_BYTES");
    if (problem.dtype != DType::f32) {
      // No split-k whose partial sums are kept in bf16/f16 (in place in D, or in the workspace): kiln
      // promises fp32 accumulation, rounded once to the output type.
      uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      pref.set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, schemes, "REDUCTION_SCHEME_MASK");
    }
    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<size_t>(max_algorithms));
    int returned = 0;
    const cublasLtMatrixLayoutOpaque_t& c_layout = problem.residual ? c : d;
    status = cublaslt().cublasLtMatmulAlgoGetHeuristic(
        handle->handle, &op, mutable_ptr(first), mutable_ptr(second), mutable_ptr(c_layout), mutable_ptr(d),
        pref.get(), max_algorithms, found.data(), &returned);
    std::vector<cublasLtMatmulHeuristicResult_t> usable;
    if (status == CUBLAS_STATUS_SUCCESS) {
      for (int i = 0; i < returned; ++i) {
        if (found[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) usable.push_back(found[static_cast<size_t>(i)]);
      }
    }
    if (usable.empty()) {
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", compute_name(type),
                         status == CUBLAS_STATUS_SUCCESS ? "no algorithm returned" : describe_status(status));
    }
    return usable;
  }
};

LtMatmul::LtMatmul(const Context& context, const GemmProblem& problem, int max_algorithms, size_t workspace_limit) {
  auto plan = std::make_unique<Plan>();
  plan->problem = problem;
  plan->shape = column_major_shape(problem);  // validates
  KILN_INTERNAL_CHECK(max_algorithms >= 1 && max_algorithms <= 64,
                      "device cuda: cuBLASLt matmul {}: asked for {} algorithms (1 to 64)", describe(problem),
                      max_algorithms);
  plan->device = context.device().index;
  plan->device_summary = context.device().summary();
  std::vector<cublasComputeType_t> candidates = compute_candidates(problem);
  plan->compute = candidates.front();
  plan->empty = is_empty(problem);
  if (plan->empty) {  // nothing to compute: no handle, no descriptors
    plan_ = std::move(plan);
    return;
  }
  plan->handle = handle_for(context);
  plan->init_layout(plan->first, plan->shape.first, "B");
  plan->init_layout(plan->second, plan->shape.second, "A");
  plan->init_layout(plan->d, plan->shape.d, "D");
  if (problem.residual) plan->init_layout(plan->c, plan->shape.c, "R");
  context.make_current();
  std::string why;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  for (cublasComputeType_t type : candidates) {
    plan->results = plan->ask_heuristic(type, max_algorithms, workspace_limit, why, status);
    if (!plan->results.empty()) {
      plan->compute = type;
      break;
    }
  }
  if (plan->results.empty()) {
    std::string message = fmt::format(
        "device cuda: cublasLtMatmulAlgoGetHeuristic: cuBLASLt {} ({}) has no algorithm for {} on {} within {} bytes "
        "of workspace ({})", cublaslt().library, cublaslt().version, describe(problem), plan->device_summary,
        workspace_limit, why);
    if (is_machine_status(status)) throw UserError(message);
    throw InternalError(message);
  }
  plan_ = std::move(plan);
}

LtMatmul::~LtMatmul() = default;
LtMatmul::LtMatmul(LtMatmul&&) noexcept = default;
LtMatmul& LtMatmul::operator=(LtMatmul&&) noexcept = default;

const GemmProblem& LtMatmul::problem() const { return plan_->problem; }
int LtMatmul::algorithms() const { return plan_->empty ? 1 : static_cast<int>(plan_->results.size()); }
cublasComputeType_t LtMatmul::compute_type() const { return plan_->compute; }

size_t LtMatmul::workspace_bytes(int algorithm) const {
  KILN_INTERNAL_CHECK(algorithm >= 0 && algorithm < algorithms(), "device cuda: cuBLASLt matmul {}: no algorithm {} "
                      "(it has {})", describe(plan_->problem), algorithm, algorithms());
  return plan_->empty ? 0 : plan_->results[static_cast<size_t>(algorithm)].workspaceSize;
}

size_t LtMatmul::max_workspace_bytes() const {
  size_t most = 0;
  for (int i = 0; i < algorithms(); ++i) most = std::max(most, workspace_bytes(i));
  return most;
}

std::string LtMatmul::summary() const {
  std::vector<size_t> workspaces;
  for (int i = 0; i < algorithms(); ++i) workspaces.push_back(workspace_bytes(i));
  return fmt::format("{}; {}{}, {} algorithm{} (workspace bytes {})", describe(plan_->problem),
                     compute_name(plan_->compute), plan_->shape.folded ? ", batch folded into rows" : "",
                     algorithms(), algorithms() == 1 ? "" : "s", fmt::join(workspaces, ", "));
}

void LtMatmul::run(const Stream& stream, int algorithm, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias,
                   CUdeviceptr residual, CUdeviceptr d, CUdeviceptr workspace, size_t workspace_bytes) const {
  const Plan& p = *plan_;
  size_t needed = this->workspace_bytes(algorithm);  // checks the index
  if (p.empty) return;
  auto require = [&](CUdeviceptr ptr, std::string_view name, uint64_t alignment) {
    KILN_INTERNAL_CHECK(ptr != 0 && ptr % alignment == 0,
                        "device cuda: cuBLASLt matmul {}: {} pointer {:#x} is null or not a multiple of {}",
                        describe(p.problem), name, ptr, alignment);
  };
  require(a, "A", p.problem.pointer_alignment);
  require(b, "B", p.problem.pointer_alignment);
  require(d, "D", p.problem.pointer_alignment);
  if (adds_bias(p.problem.epilogue)) require(bias, "bias", p.problem.pointer_alignment);
  if (p.problem.residual) require(residual, "residual", p.problem.pointer_alignment);
  if (needed > 0) require(workspace, "workspace", 256);  // cuBLAS's own rule for workspaces
  KILN_INTERNAL_CHECK(workspace_bytes >= needed, "device cuda: cuBLASLt matmul {}: algorithm {} needs {} bytes of "
                      "workspace, given {}", describe(p.problem), algorithm, needed, workspace_bytes);
  KILN_INTERNAL_CHECK(stream.context().device().index == p.device, "device cuda: cuBLASLt matmul {} made for {} run "
                      "on a stream of {}", describe(p.problem), p.device_summary, stream.context().device().summary());

  cublasLtMatmulDescOpaque_t op;
  p.init_operation(op, p.compute, device_ptr(bias));
  const float alpha = p.problem.alpha;
  const float beta = p.problem.residual ? 1.0f : 0.0f;
  // Without a residual, C is D itself with D's layout (beta 0: never read), which cuBLASLt's in-place rule allows.
  const void* c_ptr = device_ptr(p.problem.residual ? residual : d);
  const cublasLtMatrixLayoutOpaque_t& c_layout = p.problem.residual ? p.c : p.d;
  stream.context().make_current();
  check_cublas(cublaslt().cublasLtMatmul(p.handle->handle, &op, &alpha, device_ptr(b), mutable_ptr(p.first),
                                         device_ptr(a), mutable_ptr(p.second), &beta, c_ptr, mutable_ptr(c_layout),
                                         const_cast<void*>(device_ptr(d)), mutable_ptr(p.d),
                                         &p.results[static_cast<size_t>(algorithm)].algo,
                                         const_cast<void*>(device_ptr(workspace)), workspace_bytes, stream.handle()),
               fmt::format("cublasLtMatmul({}, algorithm {})", describe(p.problem), algorithm));
}

}  // namespace kiln::backend::cuda
