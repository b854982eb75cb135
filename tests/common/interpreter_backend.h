// A second backend for the tests: the fp64 reference expressed as a backend. It takes every fusion
// the CPU backend takes, through the same compiler and the same schedule/ passes, but its kernels
// interpret their group's nodes one by one on the eager kernels' fp64 reference loops (floats widened
// to f64 inside the group, rounded back to the declared dtype at its output). It compiles nothing, so
// a compile is quick, and it counts what it built and ran so that a test can tell fusion happened.
#pragma once
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "ops/node_runner.h"
#include "schedule/softmax_route.h"
#include "support/error.h"

namespace kiln::testing_backend {

struct InterpreterCounts {
  std::atomic<int> library_groups{0}, generated_groups{0}, nodes{0};
  std::atomic<int64_t> group_launches{0};
};

// Runs `nodes` (in order) of `g`: `inputs[i]` is the tensor of `input_ids[i]`; returns `output`.
class GroupInterpreter final : public backend::Kernel {
 public:
  GroupInterpreter(const Graph& g, std::vector<NodeId> nodes, std::vector<ValueId> input_ids, ValueId output,
                   InterpreterCounts& counts)
      : input_ids_(std::move(input_ids)), output_(output), output_type_(g.value(output).type), counts_(counts) {
    for (NodeId n : nodes) nodes_.push_back(g.nodes[size_t(n)]);
    for (const Node& n : nodes_)
      for (ValueId v : n.inputs)
        if (v != kNoValue && g.value(v).constant) constants_[v] = g.value(v).constant;
  }

  std::vector<Tensor> launch(const backend::LaunchArgs& args) const override {
    counts_.group_launches++;
    std::map<ValueId, Tensor> values;
    for (size_t i = 0; i < input_ids_.size(); ++i)
      if (args.inputs[i]) values[input_ids_[i]] = widened(*args.inputs[i]);
    NodeRunOptions run;
    run.kernel.reference = true;
    run.max_tensor_bytes = args.max_tensor_bytes;
    for (const Node& n : nodes_) {
      std::vector<const Tensor*> ins;
      std::vector<Tensor> widened_constants;
      widened_constants.reserve(n.inputs.size());
      for (ValueId v : n.inputs) {
        if (v == kNoValue) {
          ins.push_back(nullptr);
        } else if (auto it = values.find(v); it != values.end()) {
          ins.push_back(&it->second);
        } else {
          auto c = constants_.find(v);
          KILN_INTERNAL_CHECK(c != constants_.end(), "interpreter: value {} of a group is not available", v);
          widened_constants.push_back(widened(*c->second));
          ins.push_back(&widened_constants.back());
        }
      }
      std::vector<Tensor> outs = run_node(n, ins, run);
      for (size_t k = 0; k < n.outputs.size(); ++k)
        if (n.outputs[k] != kNoValue) values[n.outputs[k]] = widened(outs[k]);  // a Cast to f32 stays f64 here
    }
    const Tensor& out = values.at(output_);
    return {out.dtype() == output_type_.dtype ? out : convert_tensor(out, output_type_.dtype)};
  }

 private:
  static Tensor widened(const Tensor& t) {
    return is_float(t.dtype()) && t.dtype() != DType::f64 ? convert_tensor(t, DType::f64) : t;
  }

  std::vector<Node> nodes_;
  std::vector<ValueId> input_ids_;
  ValueId output_;
  TensorType output_type_;
  std::map<ValueId, std::shared_ptr<const Tensor>> constants_;
  InterpreterCounts& counts_;
};

class InterpreterBackend final : public backend::Backend {
 public:
  std::string name() const override { return "test-interpreter"; }
  std::string device_key(const Options&) const override { return "test-interpreter"; }
  backend::Fusions fusions(const Options&) const override { return {.library = true, .rows = true, .pointwise = true}; }
  schedule::RoutingThresholds routing_thresholds(const Options&) const override {
    return schedule::default_routing_thresholds();
  }
  // Every MatMul group counts as tuned, so groups take their tails and bare batched products group.
  bool tunes_gemm(const Graph&, const schedule::LibraryGroup&, const Options&) const override { return true; }
  std::unique_ptr<backend::BackendCompile> start_compile(const Options&) const override {
    return std::make_unique<Compile>(counts_);
  }
  const backend::DeviceRuntime& runtime() const override { return runtime_; }

  InterpreterCounts& counts() const { return counts_; }

 private:
  class Compile final : public backend::BackendCompile {
   public:
    explicit Compile(InterpreterCounts& counts) : counts_(counts) {}
    std::unique_ptr<backend::Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& group) override {
      counts_.library_groups++;
      return std::make_unique<GroupInterpreter>(g, group.nodes, group.inputs, group.output, counts_);
    }
    std::vector<std::unique_ptr<backend::Kernel>> generated_kernels(
        const Graph& g, const std::vector<backend::GeneratedGroup>& groups) override {
      std::vector<std::unique_ptr<backend::Kernel>> kernels;
      for (const backend::GeneratedGroup& group : groups) {
        counts_.generated_groups++;
        kernels.push_back(std::make_unique<GroupInterpreter>(g, group.nodes, group.inputs, group.output, counts_));
      }
      return kernels;
    }
    std::unique_ptr<backend::Kernel> node_kernel(const Graph& g, const Node& node) override {
      counts_.nodes++;
      return std::make_unique<NodeKernel>(node);
    }
    backend::TuningStats finish() override { return {}; }

   private:
    InterpreterCounts& counts_;
  };

  // A node alone, on its reference loops in its own dtype.
  class NodeKernel final : public backend::Kernel {
   public:
    explicit NodeKernel(Node node) : node_(std::move(node)) {}
    std::vector<Tensor> launch(const backend::LaunchArgs& args) const override {
      NodeRunOptions run;
      run.kernel.reference = true;
      run.max_tensor_bytes = args.max_tensor_bytes;
      return run_node(node_, args.inputs, run, &args.planned);
    }

   private:
    Node node_;
  };

  class HeapRuntime final : public backend::DeviceRuntime {
   public:
    std::shared_ptr<void> allocate(int64_t bytes) const override {
      void* p = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
      if (!p) user_error("out of memory allocating {} bytes", bytes);
      return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    }
  };

  mutable InterpreterCounts counts_;
  HeapRuntime runtime_;
};

}  // namespace kiln::testing_backend
