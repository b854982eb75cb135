// NVRTC compiles of a compile's CUDA kernels: many at once, and cached on disk. A cubin is stored under
// the cache folder's cuda/ subfolder, keyed by a hash of everything that decides its bytes: the
// source, NVRTC's version, the architecture and the options. A second process on a warm cache loads
// the cubins and compiles nothing.
#pragma once
#include <string>
#include <vector>

#include "kiln/options.h"

namespace kiln::backend::cuda {

struct CudaUnit {
  std::string name;  // the entry point, also the dump's file name
  std::string code;  // a whole translation unit
};

struct CubinBatch {
  std::vector<std::vector<char>> cubins;  // one per unit, in order
  int compiled = 0;                       // units NVRTC compiled (the rest came from the cache)
  double compile_seconds = 0;             // wall time of the batch
};

// Units with the same name must have the same code (names are content hashes). `arch` is NVRTC's
// --gpu-architecture ("sm_90a"). A cache folder that cannot be used is a user error; a damaged
// entry is compiled again.
CubinBatch compile_cubins(const std::vector<CudaUnit>& units, const std::string& arch, const Options& options);

}  // namespace kiln::backend::cuda
