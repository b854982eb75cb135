// Nodes that run on their own on the device: views (the input's buffer under the output's shape, from
// the same shape code as the host), bare MatMuls on cuBLASLt, and the data-movement ops of the zoo on
// the hand-written kernels of device_ops.h. Pointwise nodes never get here: the CUDA backend makes a
// generated kernel of a lone one (Fusions::pointwise_singletons).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/device_ops.h"
#include "ops/node_runner.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

int normalize_axis(int64_t axis, int rank, const std::string& what) {
  if (axis < -rank || axis >= std::max(rank, 1)) user_error("{}: axis {} out of range for rank {}", what, axis, rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

int64_t prod(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p = checked_mul(p, d[i], "a tensor size");
  return p;
}

// Base of the data-movement kernels: the node, its output allocation, the runtime.
class DeviceNodeKernel : public Kernel {
 public:
  DeviceNodeKernel(const CudaRuntime& runtime, const Graph& g, const Node& node, const DeviceOps& ops)
      : runtime_(runtime), ops_(ops), node_(node), what_(g.describe(node)) {}

 protected:
  Tensor output(const LaunchArgs& args, size_t k, DType dtype, const std::vector<int64_t>& dims) const {
    return output_buffer(runtime_, args, k, dtype, dims, what_);
  }
  const cuda::Stream& stream() const { return runtime_.cuda_stream(); }

  const CudaRuntime& runtime_;
  const DeviceOps& ops_;
  Node node_;
  std::string what_;
};

// A view: the host's shape code on the host's constants, the device buffer under the new shape.
class ViewKernel final : public Kernel {
 public:
  ViewKernel(const Graph& g, const Node& node, int64_t max_rank) : node_(node), max_rank_(max_rank) {
    for (ValueId v : node.inputs) host_constants_.push_back(v == kNoValue ? nullptr : g.value(v).constant);
  }
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    std::vector<const Tensor*> ins = args.inputs;
    for (size_t i = 1; i < ins.size(); ++i)
      if (host_constants_[i]) ins[i] = host_constants_[i].get();  // shapes are read on the host
    NodeRunOptions run;
    run.max_rank = max_rank_;
    run.max_tensor_bytes = args.max_tensor_bytes;
    return run_node(node_, ins, run);
  }

 private:
  Node node_;
  int64_t max_rank_;
  std::vector<std::shared_ptr<const Tensor>> host_constants_;
};

class GatherKernel final : public DeviceNodeKernel {
 public:
  using DeviceNodeKernel::DeviceNodeKernel;
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& data = *args.inputs.at(0);
    const Tensor& indices = *args.inputs.at(1);
    if (indices.dtype() != DType::i64 && indices.dtype() != DType::i32)
      user_error("{}: indices of dtype {}", what_, dtype_name(indices.dtype()));
    const int axis = normalize_axis(node_.attr_int("axis", 0), data.rank(), what_);
    std::vector<int64_t> dims(data.shape().begin(), data.shape().begin() + axis);
    dims.insert(dims.end(), indices.shape().begin(), indices.shape().end());
    dims.insert(dims.end(), data.shape().begin() + axis + 1, data.shape().end());
    Tensor out = output(args, 0, data.dtype(), dims);
    if (out.numel() == 0) return {out};
    const size_t r = size_t(data.rank());
    ops_.gather(stream(), device_ptr(data), device_ptr(indices), indices.dtype() == DType::i64, device_ptr(out),
                prod(data.shape(), 0, size_t(axis)), data.dim(axis), indices.numel(), prod(data.shape(), size_t(axis) + 1, r),
                static_cast<int>(dtype_size(data.dtype())));
    return {out};
  }
};

class ConcatKernel final : public DeviceNodeKernel {
 public:
  using DeviceNodeKernel::DeviceNodeKernel;
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& first = *args.inputs.at(0);
    const int axis = normalize_axis(node_.attr_int("axis", 0), first.rank(), what_);
    std::vector<int64_t> dims = first.shape();
    dims[size_t(axis)] = 0;
    std::vector<CUdeviceptr> pointers;
    std::vector<int64_t> lens;
    for (const Tensor* t : args.inputs) {
      if (t->rank() != first.rank() || t->dtype() != first.dtype())
        user_error("{}: inputs {} and {} do not concatenate", what_, first.shape_string(), t->shape_string());
      for (int d = 0; d < first.rank(); ++d)
        if (d != axis && t->dim(d) != first.dim(d))
          user_error("{}: inputs {} and {} differ off the axis", what_, first.shape_string(), t->shape_string());
      dims[size_t(axis)] += t->dim(axis);
      pointers.push_back(device_ptr(*t));
      lens.push_back(t->dim(axis));
    }
    Tensor out = output(args, 0, first.dtype(), dims);
    if (out.numel() == 0) return {out};
    ops_.concat(stream(), pointers, lens, device_ptr(out), prod(dims, 0, size_t(axis)),
                prod(dims, size_t(axis) + 1, dims.size()), static_cast<int>(dtype_size(first.dtype())));
    return {out};
  }
};

class SplitKernel final : public DeviceNodeKernel {
 public:
  SplitKernel(const CudaRuntime& runtime, const Graph& g, const Node& node, const DeviceOps& ops)
      : DeviceNodeKernel(runtime, g, node, ops) {
    const TensorType& in = g.value(node.inputs[0]).type;
    axis_ = normalize_axis(node.attr_int("axis", 0), in.rank(), what_);
    for (ValueId v : node.outputs) {
      const Dim& d = g.value(v).type.shape[size_t(axis_)];
      if (!d.is_static()) user_error("{}: a split of symbolic size is not on the CUDA backend yet", what_);
      lens_.push_back(d.value);
    }
  }
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& in = *args.inputs.at(0);
    int64_t total = 0;
    for (int64_t l : lens_) total += l;
    if (in.dim(axis_) != total) user_error("{}: input {} does not split into {} parts", what_, in.shape_string(), lens_.size());
    std::vector<Tensor> outs;
    std::vector<CUdeviceptr> pointers;
    for (size_t k = 0; k < lens_.size(); ++k) {
      std::vector<int64_t> dims = in.shape();
      dims[size_t(axis_)] = lens_[k];
      outs.push_back(output(args, k, in.dtype(), dims));
      pointers.push_back(device_ptr(outs.back()));
    }
    if (in.numel() == 0) return outs;
    ops_.split(stream(), device_ptr(in), pointers, lens_, prod(in.shape(), 0, size_t(axis_)),
               prod(in.shape(), size_t(axis_) + 1, size_t(in.rank())), static_cast<int>(dtype_size(in.dtype())));
    return outs;
  }

 private:
  int axis_ = 0;
  std::vector<int64_t> lens_;
};

// Transpose and Expand: a strided read of the input (permuted strides; stride 0 on broadcast dims).
class StridedCopyKernel final : public DeviceNodeKernel {
 public:
  StridedCopyKernel(const CudaRuntime& runtime, const Graph& g, const Node& node, const DeviceOps& ops)
      : DeviceNodeKernel(runtime, g, node, ops) {
    if (node.op == OpKind::Expand) {
      const auto& shape = g.value(node.inputs[1]).constant;
      if (!shape) user_error("{}: an Expand to a computed shape is not on the CUDA backend yet", what_);
      expand_to_ = shape->to_int64_vector();
    }
  }
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& in = *args.inputs.at(0);
    std::vector<int64_t> in_strides(size_t(in.rank()), 1);
    for (int d = in.rank() - 2; d >= 0; --d) in_strides[size_t(d)] = in_strides[size_t(d) + 1] * in.dim(d + 1);
    std::vector<int64_t> dims, strides;
    if (node_.op == OpKind::Transpose) {
      std::vector<int64_t> perm = node_.attr_ints("perm");
      if (perm.empty())
        for (int d = in.rank() - 1; d >= 0; --d) perm.push_back(d);
      if (perm.size() != size_t(in.rank())) user_error("{}: perm of {} entries for rank {}", what_, perm.size(), in.rank());
      for (int64_t p : perm) {
        const int axis = normalize_axis(p, in.rank(), what_);
        dims.push_back(in.dim(axis));
        strides.push_back(in_strides[size_t(axis)]);
      }
    } else {  // Expand: numpy broadcast of the input against the target shape
      const size_t rank = std::max(expand_to_.size(), size_t(in.rank()));
      for (size_t i = 0; i < rank; ++i) {
        const int64_t want = i + expand_to_.size() >= rank ? expand_to_[i + expand_to_.size() - rank] : 1;
        const bool has = i + size_t(in.rank()) >= rank;
        const int64_t have = has ? in.dim(static_cast<int>(i + size_t(in.rank()) - rank)) : 1;
        if (have != want && have != 1 && want != 1)
          user_error("{}: cannot expand {} to [{}]", what_, in.shape_string(), fmt::join(expand_to_, ","));
        dims.push_back(have == 1 ? want : have);
        strides.push_back(has && have != 1 ? in_strides[i + size_t(in.rank()) - rank] : 0);
      }
    }
    Tensor out = output(args, 0, in.dtype(), dims);
    if (out.numel() == 0) return {out};
    ops_.strided_copy(stream(), device_ptr(in), device_ptr(out), dims, strides, 0,
                      static_cast<int>(dtype_size(in.dtype())));
    return {out};
  }

 private:
  std::vector<int64_t> expand_to_;
};

// MaxPool 2-D (one output) and GlobalAveragePool over NCHW.
class PoolKernel final : public DeviceNodeKernel {
 public:
  using DeviceNodeKernel::DeviceNodeKernel;
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& x = *args.inputs.at(0);
    if (x.rank() != 4) user_error("{}: input {}: the CUDA backend pools 2-D NCHW", what_, x.shape_string());
    if (node_.op == OpKind::GlobalAveragePool) {
      Tensor out = output(args, 0, x.dtype(), {x.dim(0), x.dim(1), 1, 1});
      if (out.numel() == 0) return {out};
      ops_.global_average_pool(stream(), device_ptr(x), device_ptr(out), x.dim(0) * x.dim(1), x.dim(2) * x.dim(3),
                               x.dtype());
      return {out};
    }
    const std::vector<int64_t> kernel = node_.attr_ints("kernel_shape");
    std::vector<int64_t> strides = node_.attr_ints("strides"), pads = node_.attr_ints("pads"),
                         dilations = node_.attr_ints("dilations");
    if (strides.empty()) strides = {1, 1};
    if (pads.empty()) pads = {0, 0, 0, 0};
    if (dilations.empty()) dilations = {1, 1};
    if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
      user_error("{}: the CUDA backend pools 2-D windows", what_);
    const Pool2dShape shape = make_max_pool2d_shape(
        x.dim(0), x.dim(1), x.dim(2), x.dim(3), std::span<const int64_t, 2>(kernel.data(), 2),
        std::span<const int64_t, 2>(strides.data(), 2), std::span<const int64_t, 4>(pads.data(), 4),
        std::span<const int64_t, 2>(dilations.data(), 2), node_.attr_int("ceil_mode", 0) != 0, x.dtype());
    Tensor out = output(args, 0, x.dtype(), {x.dim(0), x.dim(1), shape.out_h, shape.out_w});
    if (out.numel() == 0) return {out};
    ops_.max_pool2d(stream(), device_ptr(x), device_ptr(out), shape);
    return {out};
  }
};

// Pad in constant mode along one axis, with constant pads and value and a static input shape: the blocks
// before and after are filled on the host once, uploaded, and joined with the input by one concat.
class PadKernel final : public DeviceNodeKernel {
 public:
  PadKernel(const CudaRuntime& runtime, const Graph& g, const Node& node, const DeviceOps& ops)
      : DeviceNodeKernel(runtime, g, node, ops) {
    const TensorType& t = g.value(node.inputs[0]).type;
    if (!is_static(t.shape)) user_error("{}: the CUDA backend pads inputs of a static shape only", what_);
    dims_ = static_dims(t.shape);
    const Tensor* pads = constant_input(g, 1);
    const Tensor* axes = constant_input(g, 3);
    if (!pads || (node.has_input(3) && !axes) || node.attr_string("mode", "constant") != "constant")
      user_error("{}: the CUDA backend pads with constant pads and axes, mode constant only", what_);
    const size_t rank = dims_.size();
    // Pads of every axis: [begins..., ends...], from the listed axes' pads when axes are given.
    std::vector<int64_t> p = pads->to_int64_vector();
    if (axes) {
      const std::vector<int64_t> listed = axes->to_int64_vector();
      if (p.size() != 2 * listed.size()) user_error("{}: {} pads for {} axes", what_, p.size(), listed.size());
      std::vector<int64_t> all(2 * rank, 0);
      for (size_t i = 0; i < listed.size(); ++i) {
        const size_t a = size_t(normalize_axis(listed[i], int(rank), what_));
        all[a] = p[i], all[a + rank] = p[i + listed.size()];
      }
      p = std::move(all);
    }
    if (p.size() != 2 * rank) user_error("{}: {} pads for rank {}", what_, p.size(), rank);
    for (size_t d = 0; d < rank; ++d) {
      if (p[d] < 0 || p[d + rank] < 0) user_error("{}: the CUDA backend does not crop (negative pads)", what_);
      if (p[d] == 0 && p[d + rank] == 0) continue;
      if (axis_ >= 0) user_error("{}: the CUDA backend pads one axis only", what_);
      axis_ = static_cast<int>(d), before_ = p[d], after_ = p[d + rank];
    }
    const Tensor* value = node.has_input(2) ? constant_input(g, 2) : nullptr;
    if (node.has_input(2) && (!value || value->numel() != 1 || value->dtype() != t.dtype))
      user_error("{}: the CUDA backend pads with a constant scalar of the input's type", what_);
    if (axis_ < 0) return;
    for (int64_t len : {before_, after_}) {
      std::vector<int64_t> shape = dims_;
      shape[size_t(axis_)] = len;
      Tensor block = Tensor::empty(t.dtype, shape);  // zeros: the default value
      const size_t es = dtype_size(t.dtype);
      if (value)
        for (int64_t i = 0; i < block.numel(); ++i)
          std::memcpy(static_cast<char*>(block.raw()) + size_t(i) * es, value->raw(), es);
      blocks_.push_back(len > 0 ? runtime.upload(block) : Tensor());
    }
  }
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& in = *args.inputs.at(0);
    if (in.shape() != dims_) user_error("{}: input {} where the CUDA backend planned [{}]", what_, in.shape_string(), fmt::join(dims_, ","));
    std::vector<int64_t> dims = dims_;
    if (axis_ >= 0) dims[size_t(axis_)] += before_ + after_;
    Tensor out = output(args, 0, in.dtype(), dims);
    if (out.numel() == 0) return {out};
    if (axis_ < 0) {
      ops_.strided_copy(stream(), device_ptr(in), device_ptr(out), dims, contiguous_strides(dims), 0,
                        static_cast<int>(dtype_size(in.dtype())));
      return {out};
    }
    const std::vector<CUdeviceptr> pointers = {before_ > 0 ? device_ptr(blocks_[0]) : 0, device_ptr(in),
                                               after_ > 0 ? device_ptr(blocks_[1]) : 0};
    const std::vector<int64_t> lens = {before_, dims_[size_t(axis_)], after_};
    ops_.concat(stream(), pointers, lens, device_ptr(out), prod(dims, 0, size_t(axis_)),
                prod(dims, size_t(axis_) + 1, dims.size()), static_cast<int>(dtype_size(in.dtype())));
    return {out};
  }

 private:
  const Tensor* constant_input(const Graph& g, size_t i) const {
    return node_.has_input(i) ? g.value(node_.inputs[i]).constant.get() : nullptr;
  }
  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
    std::vector<int64_t> s(dims.size(), 1);
    for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
    return s;
  }
  std::vector<int64_t> dims_;
  int axis_ = -1;
  int64_t before_ = 0, after_ = 0;
  std::vector<Tensor> blocks_;  // the before and after blocks, on the device
};

bool is_view(OpKind op) {
  return op == OpKind::Identity || op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze ||
         op == OpKind::Unsqueeze;
}

}  // namespace

bool has_node_kernel(const Graph& g, const Node& node) {
  switch (node.op) {
    case OpKind::MatMul: case OpKind::Gather: case OpKind::Concat: case OpKind::Split: case OpKind::Transpose:
    case OpKind::Expand: case OpKind::GlobalAveragePool: case OpKind::Pad: return true;
    case OpKind::MaxPool: return node.outputs.size() < 2 || node.outputs[1] == kNoValue;
    case OpKind::Conv: return has_conv_route(g, node, nullptr);
    default: return is_view(node.op);
  }
}

std::unique_ptr<Kernel> make_node_kernel(const CudaRuntime& runtime, const Graph& g, const Node& node,
                                         const Options& options, ModuleCache& modules) {
  if (!has_node_kernel(g, node))
    user_error("{}: the CUDA backend has no kernel for {} yet (run it with --device cpu)", g.describe(node),
               op_name(node.op));
  if (is_view(node.op)) return std::make_unique<ViewKernel>(g, node, options.max_rank);
  if (node.op == OpKind::MatMul) return make_bare_matmul_kernel(runtime, g, node, options);
  if (node.op == OpKind::Conv) return make_conv_kernel(runtime, g, node, nullptr, options, modules);
  const DeviceOps& ops = runtime.device_ops();
  switch (node.op) {
    case OpKind::Gather: return std::make_unique<GatherKernel>(runtime, g, node, ops);
    case OpKind::Concat: return std::make_unique<ConcatKernel>(runtime, g, node, ops);
    case OpKind::Split: return std::make_unique<SplitKernel>(runtime, g, node, ops);
    case OpKind::Transpose:
    case OpKind::Expand: return std::make_unique<StridedCopyKernel>(runtime, g, node, ops);
    case OpKind::MaxPool:
    case OpKind::GlobalAveragePool: return std::make_unique<PoolKernel>(runtime, g, node, ops);
    case OpKind::Pad: return std::make_unique<PadKernel>(runtime, g, node, ops);
    default: internal_error("{}: has_node_kernel and make_node_kernel disagree", g.describe(node));
  }
}

}  // namespace kiln::backend::cuda
