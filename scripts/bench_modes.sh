#!/usr/bin/env bash
# kiln's compiled mode against its eager mode on zoo models: same machine, same inputs, same thread
# count. Rounds alternate eager and compiled so that drift hits both alike; each round is one process
# per mode with WARMUP untimed and ITERS timed runs; the table shows the median of the round medians,
# the compiled / eager ratio, and what each mode launches (ops eager runs, kernels compiled launches).
# Kernels are compiled (or found in the cache) before the first round.
# usage: bench_modes.sh [THREADS] [ROUNDS] [ITERS] MODEL:DIMS...   e.g. bert:batch=1,seq=128 resnet18:batch=1
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
threads="${1:-2}" rounds="${2:-3}" iters="${3:-30}"
shift 3 || true
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("bert:batch=1,seq=128" "vit:batch=1" "resnet18:batch=1")
. "$root/scripts/bench_common.sh"
printf "| model | eager ms | compiled ms | compiled / eager | ops (eager) | kernels (compiled) |\n|---|---|---|---|---|---|\n"
for spec in "${specs[@]}"; do
  model="${spec%%:*}" dims="${spec#*:}"
  prepare_model "$model" "$dims"
  "$build/kiln" compile "$work/$model.onnx" "${dim_args[@]}" > /dev/null
  eager_ms=() compiled_ms=()
  for ((r = 0; r < rounds; ++r)); do
    e="$("$build/kiln" run "$work/$model.onnx" --mode eager "${feeds[@]}" --threads "$threads" --warmup 3 --iters "$iters" --json)"
    c="$("$build/kiln" run "$work/$model.onnx" --mode compiled "${feeds[@]}" --threads "$threads" --warmup 3 --iters "$iters" --json)"
    eager_ms+=("$(echo "$e" | field latency_ms)") compiled_ms+=("$(echo "$c" | field latency_ms)")
  done
  ops=$(echo "$e" | field ops) kernels=$(echo "$c" | field kernels)
  em=$(printf "%s\n" "${eager_ms[@]}" | median) cm=$(printf "%s\n" "${compiled_ms[@]}" | median)
  printf "| %s (%s) | %.1f | %.1f | %.2f | %s | %s |\n" "$model" "$dims" "$em" "$cm" \
    "$(awk -v c="$cm" -v e="$em" 'BEGIN {print c / e}')" "$ops" "$kernels"
done
