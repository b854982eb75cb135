// `kiln --version`: what this binary is and what it was built with.
#include <cblas.h>
#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.h>
#ifdef KILN_HAVE_CUDA
#include <cuda.h>
#endif

#include "kiln_git.h"
#include "tools/commands.h"

namespace kiln::tools {

std::string version_text() {
  const dnnl_version_t* dnnl = dnnl_version();
  std::string text = fmt::format("kiln {} (commit {})\n", KILN_VERSION, KILN_GIT_COMMIT);
  text += fmt::format("oneDNN {}.{}.{}, {}\n", dnnl->major, dnnl->minor, dnnl->patch, openblas_get_config());
#ifdef KILN_HAVE_CUDA
  text += fmt::format("CUDA backend: built against CUDA {}.{} (driver and NVRTC are found at run time)",
                      CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
#else
  text += "CUDA backend: not built (no CUDA toolkit when this kiln was built)";
#endif
  return text;
}

}  // namespace kiln::tools
