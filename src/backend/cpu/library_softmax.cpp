// The library route of Softmax / LogSoftmax (softmax_route.h): the node alone through oneDNN's
// softmax primitive, on the tensor's plain layout viewed as [outer, axis, inner].
#include "kernels/onednn/softmax.h"
#include "backend/cpu/library_kernel_detail.h"

namespace kiln::backend::cpu::library_detail {
namespace {

class SoftmaxKernel final : public KernelBase {
 public:
  SoftmaxKernel(const Graph& g, const LibraryGroup& grp)
      : KernelBase(g, grp), log_(grp.core == LibraryCore::log_softmax),
        axis_(g.nodes[size_t(grp.core_node)].attr_int("axis", -1)) {}

  Tensor run_into(const std::vector<const Tensor*>& in, int64_t max_bytes, Tensor planned) const override {
    const Tensor& x = *in.at(0);
    if (x.dtype() != DType::f32) fail("input dtype {}, expected f32", dtype_name(x.dtype()));
    const int rank = x.rank();
    if (axis_ < -rank || axis_ >= rank) fail("axis {} is out of range for rank {}", axis_, rank);
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + rank : axis_);
    Tensor y = allocate(x.shape(), max_bytes, planned);
    if (y.numel() == 0) return y;
    onednn::SoftmaxShape s;
    for (int d = 0; d < rank; ++d) {
      int64_t size = x.dim(d);
      if (d < axis) s.outer *= size;
      else if (d == axis) s.n = size;
      else s.inner *= size;
    }
    if (!onednn::softmax_f32(s, log_, x.data<float>(), y.data<float>()))
      internal_error("library call '{}': oneDNN has no softmax for {}", label_, x.shape_string());
    return y;
  }

 private:
  bool log_;
  int64_t axis_;
};

}  // namespace

std::unique_ptr<LibraryKernel> make_softmax_kernel(const Graph& g, const LibraryGroup& grp) {
  return std::make_unique<SoftmaxKernel>(g, grp);
}

}  // namespace kiln::backend::cpu::library_detail
