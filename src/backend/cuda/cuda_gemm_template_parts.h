// The wgmma kernel's part of the GEMM template's source (cuda_gemm_wgmma_source.cpp), for
// cuda_gemm_template_source.cpp, which puts it after the #defines and the helpers both kernels share
// (kiln_word_to_f32, kiln_f32_to_word, kiln_pack, kiln_smem, kiln_epilogue).
#pragma once
#include <cstddef>
#include <string>

#include "backend/cuda/cuda_gemm_template_source.h"

namespace kiln::backend::cuda {

std::string gemm_wgmma_body(const GemmTemplateSpec& spec);
// The row_norm helpers (cuda_gemm_row_norm_source.cpp), inside #ifdef EPI_NORM; before the kernel.
std::string gemm_row_norm_helpers();
size_t gemm_wgmma_shared_bytes(const GemmTemplateConfig& c);

}  // namespace kiln::backend::cuda
