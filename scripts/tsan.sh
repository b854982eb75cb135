#!/usr/bin/env bash
# Builds kiln with ThreadSanitizer into build-tsan/ and runs the thread tests under it:
# test_reliability's session concurrency, determinism and thread-count tests (one Session, many
# threads; OpenMP at 1-4 threads) and
# test_codegen's compile concurrency tests (many threads and processes filling one kernel cache).
#
# Compiler: GCC (the system c++). clang 14 cannot build kiln (target_clones on function templates,
# `#pragma GCC target` around AVX-512 intrinsics); see docs/RELIABILITY.md. target_clones is turned
# off in this build (tests/reliability/tsan_no_target_clones.h says why).
#
# OpenMP: GNU libgomp is not instrumented, so TSan cannot see its barriers and reports false races
# between a parallel region and the code around it. A shim folder on LD_LIBRARY_PATH makes
# libgomp.so.1 resolve to LLVM's libomp (which implements libgomp's GOMP_* interface) for the whole
# process: kiln, oneDNN, and the generated kernels (compiled at run time by the system compiler,
# without TSan: their own memory accesses are not checked). libomp's TSan tool, libarcher, then tells
# TSan about every OpenMP barrier, task and lock. tests/reliability/tsan.supp only ignores what
# uninstrumented third-party code does itself (today: the calls libomp makes to pthread_mutex_*);
# kiln's own code is never suppressed, and two canary races must be reported before anything else.
#
# usage: scripts/tsan.sh [--omp-threads N] [--runs N] [--no-build] [-- extra gtest args]
#   --omp-threads N  OpenMP threads inside each kernel (default 2; 1 checks kiln's own threading only)
#   --runs N         KILN_STRESS_RUNS for the concurrency tests (default 20: TSan is 5-15x slower)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_TSAN_DIR:-$root/build-tsan}"
omp_threads=2
runs=20
do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --omp-threads) omp_threads="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --) shift; break ;;
    *) echo "usage: $0 [--omp-threads N] [--runs N] [--no-build] [-- gtest args]" >&2; exit 2 ;;
  esac
done

cxx="${KILN_TSAN_CXX:-g++}"
llvm_lib="${KILN_TSAN_LLVM_LIB:-/usr/lib/llvm-14/lib}"  # LLVM's libomp and libarcher
libomp="$llvm_lib/libomp.so.5"
archer="$llvm_lib/libarcher.so"
for f in "$libomp" "$archer"; do
  [ -e "$f" ] || { echo "tsan.sh: $f not found (apt-get install libomp-14-dev)" >&2; exit 1; }
done

if [ $do_build -eq 1 ]; then
  # A build folder made with another compiler cannot be switched: start it again.
  if [ -f "$build/CMakeCache.txt" ] && [ "$(cat "$build/.tsan-cxx" 2>/dev/null)" != "$cxx" ]; then
    rm -rf "$build"
  fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer -include $root/tests/reliability/tsan_no_target_clones.h" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
  echo "$cxx" >"$build/.tsan-cxx"
  ninja -C "$build" -j"${KILN_TSAN_JOBS:-2}" test_reliability test_codegen
fi

# libgomp.so.1 -> libomp, for kiln, oneDNN and the generated kernels alike.
shim="$build/omp-shim"
mkdir -p "$shim"
ln -sf "$libomp" "$shim/libgomp.so.1"
export LD_LIBRARY_PATH="$shim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMP_TOOL_LIBRARIES="$archer"
export OMP_NUM_THREADS="$omp_threads"
export KILN_STRESS_RUNS="$runs"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$root/tests/reliability/tsan.supp${TSAN_OPTIONS:+ $TSAN_OPTIONS}"

status=0
run() {
  echo "== $*"
  "$@" || { echo "tsan.sh: FAILED (exit $?): $*"; status=1; }
}
# The canaries: deliberate races (between std::threads, and inside an OpenMP region) that TSan must
# report with exit 66, or a clean run below would prove nothing.
for canary in DataRace OpenMpDataRace; do
  rc=0
  "$build/tests/test_reliability" --gtest_also_run_disabled_tests --gtest_filter="TsanCanary.DISABLED_$canary" \
    >"$build/canary-$canary.log" 2>&1 || rc=$?
  if [ $rc -eq 66 ] && grep -q "WARNING: ThreadSanitizer: data race" "$build/canary-$canary.log"; then
    echo "== canary $canary: reported, as it must be"
  else
    echo "tsan.sh: canary $canary was NOT reported (exit $rc, log $build/canary-$canary.log)"; status=1
  fi
done
run "$build/tests/test_reliability" --gtest_filter='SessionConcurrency.*:Determinism.*:ThreadCount.*' "$@"
run "$build/tests/test_codegen" --gtest_filter='CompileConcurrency.*' "$@"
[ $status -eq 0 ] && echo "tsan.sh: no data race reported (OMP_NUM_THREADS=$OMP_NUM_THREADS, KILN_STRESS_RUNS=$KILN_STRESS_RUNS)"
exit $status
