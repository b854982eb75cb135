#!/usr/bin/env bash
# Eight processes compile and run the same model at once against one empty kernel cache: every one
# must succeed, and all must write identical outputs (the cache never hands out a half-written or
# foreign kernel). Then a ninth process must find every kernel in the cache (no compiler runs).
# usage: compile_concurrency.sh KILN [MODEL.onnx [--dim ...]]   (default: the bundled demo model)
set -uo pipefail
kiln="$1"; shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export KILN_CACHE_DIR="$work/cache"
pids=()
for i in 1 2 3 4 5 6 7 8; do
  "$kiln" run "$@" --iters 1 --warmup 0 --mode compiled --seed 3 --dim seq=24 --output-dir "$work/out$i" >"$work/log$i" 2>&1 &
  pids+=($!)
done
failures=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "FAIL process $((i + 1)): $(head -c 400 "$work/log$((i + 1))")"
    failures=$((failures + 1))
  fi
done
[ $failures -eq 0 ] || exit 1
for i in 2 3 4 5 6 7 8; do
  if ! diff -r -q "$work/out1" "$work/out$i" >/dev/null; then
    echo "FAIL process $i wrote outputs that differ from process 1's"
    failures=$((failures + 1))
  fi
done
[ $failures -eq 0 ] || exit 1
KILN_DEBUG=codegen "$kiln" run "$@" --iters 1 --warmup 0 --mode compiled --seed 3 --dim seq=24 --output-dir "$work/warm" >"$work/warm.log" 2>&1 || {
  echo "FAIL warm run: $(head -c 400 "$work/warm.log")"; exit 1; }
if grep -q "\[codegen\] compile" "$work/warm.log"; then
  echo "FAIL the warm run compiled kernels again:"; grep "\[codegen\] compile" "$work/warm.log" | head -3; exit 1
fi
diff -r -q "$work/out1" "$work/warm" >/dev/null || { echo "FAIL the warm run's outputs differ"; exit 1; }
echo "8 concurrent compiles succeeded with identical outputs; the warm run compiled nothing"
