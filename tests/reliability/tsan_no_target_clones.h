// Force-included into every kiln source by scripts/tsan.sh (never by normal builds).
//
// target_clones makes GCC emit an ifunc resolver, which the dynamic loader runs while relocating the
// executable, before the TSan runtime is initialised; compiled with -fsanitize=thread the resolver
// calls into TSan and the program dies with SIGSEGV before main (seen: the resolver of
// kiln::linalg_ops::axpy_row, src/ops/linalg/matmul.cpp). Under TSan each such function is compiled
// once, for the baseline ISA: the clones differ only in vector width, not in what memory they touch.
#pragma once
#define target_clones(...) unused
