// A generated group's sizes at run time, for every backend's generated kernels: its size symbols read
// from its inputs' shapes (GeneratedGroup::symbols), each input checked against the shape the kernel
// indexes it by (two symbols that inference assumed equal may differ at run time, and reading past a
// buffer is never an option), and the output's dims.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"

namespace kiln::backend {

class GroupShapes {
 public:
  // `symbol_names` in the kernel's parameter order (loops::kernel_symbols), one per group symbol source.
  GroupShapes(const Graph& g, const GeneratedGroup& group, std::string kernel, std::vector<std::string> symbol_names);

  struct Bound {
    std::vector<int64_t> symbols;                       // in the kernel's parameter order
    std::unordered_map<std::string, int64_t> by_name;  // the same, by symbol
    std::vector<int64_t> output_dims;
  };
  // An input of another shape than the model's is a user error naming the kernel and the input.
  Bound bind(const std::vector<const Tensor*>& inputs) const;
  const std::string& kernel() const { return kernel_; }
  const TensorType& output() const { return output_; }

 private:
  struct Input {
    std::string name;
    Shape shape;
  };
  std::string kernel_;
  std::vector<Input> inputs_;
  TensorType output_;
  std::vector<schedule::SymbolSource> sources_;
  std::vector<std::string> symbol_names_;
};

}  // namespace kiln::backend
