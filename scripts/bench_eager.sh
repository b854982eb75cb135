#!/usr/bin/env bash
# Eager latency of zoo models beside ONNX Runtime's, same machine, same inputs, same thread count.
# Rounds alternate kiln and ORT so that drift hits both alike; each round is one process per side
# with WARMUP untimed and ITERS timed runs; the table shows the median of the round medians.
# usage: bench_eager.sh [THREADS] [ROUNDS] [ITERS] MODEL:DIMS...   e.g. bert:batch=1,seq=128 resnet18:batch=1
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
threads="${1:-2}" rounds="${2:-3}" iters="${3:-20}"
shift 3 || true
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("bert:batch=1,seq=128" "resnet18:batch=1")
. "$root/scripts/bench_common.sh"
printf "| model | kiln eager ms | ORT ms | kiln / ORT |\n|---|---|---|---|\n"
for spec in "${specs[@]}"; do
  model="${spec%%:*}" dims="${spec#*:}"
  prepare_model "$model" "$dims"
  kiln_ms=() ort_ms=()
  for ((r = 0; r < rounds; ++r)); do
    kiln_ms+=("$("$build/kiln" run "$work/$model.onnx" --mode eager "${feeds[@]}" --threads "$threads" --warmup 3 --iters "$iters" --json | field latency_ms)")
    ort_ms+=("$(KILN_ORT_DIR="$build/ort" node "$root/scripts/ort_run.js" "$work/$model.onnx" "$work/bench_ort" \
                 --threads "$threads" --iters "$iters" --warmup 3 "${ort_feeds[@]}" | field latency_ms)")
  done
  k=$(printf "%s\n" "${kiln_ms[@]}" | median) o=$(printf "%s\n" "${ort_ms[@]}" | median)
  printf "| %s (%s) | %.1f | %.1f | %.2fx |\n" "$model" "$dims" "$k" "$o" "$(awk -v k="$k" -v o="$o" 'BEGIN {print k / o}')"
done
