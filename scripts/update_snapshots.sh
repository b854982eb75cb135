#!/usr/bin/env bash
# Rewrites tests/data/snapshots/ (the zoo's fused IR, plan, generated kernels and GEMM template sources)
# from the current build, for a change that is meant to change generated code; `git diff` then shows
# what changed, to be explained in the commit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
ninja -C "$build" test_compiler
KILN_UPDATE_SNAPSHOTS=1 "$build/tests/test_compiler" --gtest_filter='Zoo/ZooSnapshot.*'
git -C "$root" status --short tests/data/snapshots
