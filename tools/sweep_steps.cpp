#include "tools/sweep_steps.h"

#include "backend/kernel.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::tools {
namespace {

ValueId value_named(const Graph& g, const std::string& name) {
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == name) return static_cast<ValueId>(v);
  return kNoValue;
}

}  // namespace

std::vector<int> steps_reaching(const compiler::Executable& exe, const std::string& output) {
  const Graph& g = exe.graph;
  const ValueId out = value_named(g, output);
  KILN_INTERNAL_CHECK(out != kNoValue, "sweep: the compiled graph has no value '{}'", output);
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < exe.steps.size(); ++i)
    for (ValueId v : exe.steps[i].outputs)
      if (v != kNoValue) producer[size_t(v)] = static_cast<int>(i);
  std::vector<char> needed(exe.steps.size(), 0);
  std::vector<ValueId> todo{out};
  while (!todo.empty()) {
    const int s = producer[size_t(todo.back())];
    todo.pop_back();
    if (s < 0 || needed[size_t(s)]) continue;
    needed[size_t(s)] = 1;
    for (ValueId in : exe.steps[size_t(s)].inputs)
      if (in != kNoValue) todo.push_back(in);
  }
  std::vector<int> steps;
  for (size_t i = 0; i < needed.size(); ++i)
    if (needed[i]) steps.push_back(static_cast<int>(i));
  return steps;
}

PreallocatedSteps::PreallocatedSteps(const compiler::Executable& exe, std::vector<int> steps,
                                     std::map<std::string, Tensor> bound, int64_t max_tensor_bytes)
    : exe_(exe), steps_(std::move(steps)), values_(exe.graph.values.size()), max_tensor_bytes_(max_tensor_bytes) {
  const Graph& g = exe.graph;
  for (auto& [name, t] : bound) {
    const ValueId v = value_named(g, name);
    KILN_INTERNAL_CHECK(v != kNoValue, "sweep: the compiled graph has no value '{}'", name);
    values_[size_t(v)] = std::move(t);
  }
  for (int s : steps_) {
    const compiler::Step& step = exe.steps.at(size_t(s));
    KILN_INTERNAL_CHECK(step.kind != compiler::StepKind::view, "sweep: step '{}' is a view", step.label);
    for (ValueId v : step.outputs) {
      if (v == kNoValue || values_[size_t(v)].raw()) continue;
      const Value& value = g.value(v);
      const std::vector<int64_t> dims = static_dims(value.type.shape);
      if (checked_mul(checked_numel(dims, value.name), static_cast<int64_t>(dtype_size(value.type.dtype)), value.name) >
          max_tensor_bytes)
        user_error("sweep: '{}' ({}) exceeds max_tensor_bytes", value.name, type_string(value.type));
      values_[size_t(v)] = Tensor::empty(value.type.dtype, dims);
    }
  }
}

void PreallocatedSteps::launch() {
  const Graph& g = exe_.graph;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor> planned;
  for (int s : steps_) {
    const compiler::Step& step = exe_.steps[size_t(s)];
    inputs.clear();
    for (ValueId v : step.inputs) {
      if (v == kNoValue) inputs.push_back(nullptr);
      else if (g.value(v).constant) inputs.push_back(exe_.constants[size_t(v)].get());
      else {
        KILN_INTERNAL_CHECK(values_[size_t(v)].raw(), "sweep: step '{}' reads '{}', which nothing gave or made",
                            step.label, g.value(v).name);
        inputs.push_back(&values_[size_t(v)]);
      }
    }
    planned.clear();
    for (ValueId v : step.outputs) planned.push_back(v == kNoValue ? Tensor() : values_[size_t(v)]);
    std::vector<Tensor> outs = exe_.kernels[size_t(step.kernel)]->launch({inputs, planned, max_tensor_bytes_});
    KILN_INTERNAL_CHECK(outs.size() == step.outputs.size(), "sweep: step '{}' made {} outputs, expected {}",
                        step.label, outs.size(), step.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k)
      KILN_INTERNAL_CHECK(step.outputs[k] == kNoValue || outs[k].raw() == values_[size_t(step.outputs[k])].raw(),
                          "sweep: step '{}' did not write into its preallocated output", step.label);
  }
}

const Tensor& PreallocatedSteps::value(const std::string& name) const {
  const ValueId v = value_named(exe_.graph, name);
  KILN_INTERNAL_CHECK(v != kNoValue && values_[size_t(v)].raw(), "sweep: no tensor for '{}'", name);
  return values_[size_t(v)];
}

}  // namespace kiln::tools
