// kiln sweep gemm --device cuda: microseconds and TFLOP/s of every GEMM choice on the GPU, in CUDA-graph
// replay (see sweep_gemm_cuda.cpp). cmd_sweep_gemm.cpp dispatches here.
#pragma once
#include <string>
#include <vector>

#include "kiln/options.h"

namespace kiln::tools {

struct CudaGemmSweepArgs {
  std::string device = "cuda";      // "cuda" or "cuda:N"
  std::vector<std::string> shapes;  // "MxNxK"; empty: the transformer shapes at M 128 and 1024, and 8192^3
  std::string json_file;
  bool bare_only = false, epilogue_only = false;
};

int sweep_gemm_cuda(const CudaGemmSweepArgs& args, const Options& options);

}  // namespace kiln::tools
