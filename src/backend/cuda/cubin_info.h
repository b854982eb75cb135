// What ptxas decided for each kernel of a cubin, read from the cubin itself (its ELF symbol table and
// the .nv.info attributes), so that no GPU and no compiler log is needed: NVRTC's log carries ptxas's
// `-v` report on some installations and not on others (the H200 machine's gave an empty log).
#pragma once
#include <map>
#include <span>
#include <string>

namespace kiln::backend::cuda {

struct CubinKernelInfo {
  int registers = -1;    // registers a thread (EIATTR_REGCOUNT); -1 when the cubin does not say
  int frame_bytes = -1;  // the thread's stack frame: local arrays and spills (EIATTR_FRAME_SIZE)
};

// The kernels (entry functions) of a cubin by symbol name; device functions are not listed. A cubin
// that is not a well-formed ELF64 image is an InternalError (kiln reads only cubins NVRTC just wrote).
std::map<std::string, CubinKernelInfo> cubin_kernels(std::span<const char> cubin);

}  // namespace kiln::backend::cuda
