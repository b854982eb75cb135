#!/usr/bin/env bash
# Builds kiln with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ and runs the unit
# tests and the hostile-model corpus under them (the zoo and the conformance runs are left to the
# plain build: under ASan they take too long for 2 cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_ASAN_DIR:-$root/build-asan}"
"$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON >/dev/null
ninja -C "$build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
# package and python: programs without ASan's runtime load the sanitized libkiln.so, which ASan refuses.
ctest --output-on-failure -j2 -LE "zoo|conformance|package|python"
# ThreadSanitizer needs a build of its own (build-tsan/, GCC, LLVM's OpenMP runtime under libgomp's
# name): KILN_SANITIZE_TSAN=1 runs it after the ASan tests (docs/RELIABILITY.md).
if [ "${KILN_SANITIZE_TSAN:-0}" = 1 ]; then
  "$root/scripts/tsan.sh"
fi
