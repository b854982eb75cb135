#!/usr/bin/env bash
# kiln compiled in fp32 against kiln compiled in another precision (bf16 on a CPU with AVX512_BF16 or
# AMX) on zoo models: same machine, inputs and threads. Rounds alternate the two (one process each,
# WARMUP 3 untimed and ITERS timed runs), so that drift hits both alike; the table shows the median and
# the smallest of the round medians, the fp32 / precision ratio of the medians, peak resident memory,
# and the low-precision rule (cosine >= 0.999, relative L2 <= 2e-2) of the precision's outputs against
# the fp32 ones (`kiln compare --low-precision`). Kernels are compiled (or found in the cache) first.
# usage: bench_precision.sh [PRECISION] [THREADS] [ROUNDS] [ITERS] MODEL:DIMS...
#   e.g. bench_precision.sh bf16 2 5 20 bert:batch=1,seq=128 resnet18:batch=1
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
precision="${1:-bf16}" threads="${2:-2}" rounds="${3:-5}" iters="${4:-20}"
shift 4 || true
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("bert:batch=1,seq=128" "vit:batch=1" "resnet18:batch=1")
. "$root/scripts/bench_common.sh"
printf "| model | fp32 ms (median / min of rounds) | %s ms | fp32 / %s | peak MB fp32 / %s | %s vs fp32 outputs |\n" \
  "$precision" "$precision" "$precision" "$precision"
printf "|---|---|---|---|---|---|\n"
for spec in "${specs[@]}"; do
  model="${spec%%:*}" dims="${spec#*:}"
  prepare_model "$model" "$dims"
  rm -rf "$work/out-fp32" "$work/out-$precision" "$work/out-fp64"
  for p in fp32 "$precision"; do  # compiles (or finds the kernels), and keeps the outputs to compare
    "$build/kiln" run "$work/$model.onnx" --precision "$p" "${feeds[@]}" --threads "$threads" --iters 1 \
      --output-dir "$work/out-$p" > /dev/null
  done
  "$build/kiln" run "$work/$model.onnx" --mode reference "${feeds[@]}" --output-dir "$work/out-fp64" > /dev/null
  accuracy="$("$build/kiln" compare --low-precision "$work/out-$precision" "$work/out-fp32" "$work/out-fp64" | grep -E "^(PASS|FAIL)" | tr "\n" " ")"
  base_ms=() low_ms=()
  for ((r = 0; r < rounds; ++r)); do
    b="$("$build/kiln" run "$work/$model.onnx" --precision fp32 "${feeds[@]}" --threads "$threads" --warmup 3 --iters "$iters" --json)"
    l="$("$build/kiln" run "$work/$model.onnx" --precision "$precision" "${feeds[@]}" --threads "$threads" --warmup 3 --iters "$iters" --json)"
    base_ms+=("$(echo "$b" | field latency_ms)") low_ms+=("$(echo "$l" | field latency_ms)")
  done
  bm=$(printf "%s\n" "${base_ms[@]}" | median) lm=$(printf "%s\n" "${low_ms[@]}" | median)
  bmin=$(printf "%s\n" "${base_ms[@]}" | smallest) lmin=$(printf "%s\n" "${low_ms[@]}" | smallest)
  bpeak=$(echo "$b" | field peak_resident_bytes) lpeak=$(echo "$l" | field peak_resident_bytes)
  printf "| %s (%s) | %.1f / %.1f | %.1f / %.1f | %.2fx | %.0f / %.0f | %s |\n" "$model" "$dims" "$bm" "$bmin" "$lm" "$lmin" \
    "$(awk -v b="$bm" -v l="$lm" 'BEGIN {print b / l}')" "$(awk -v x="$bpeak" 'BEGIN {print x / 1e6}')" \
    "$(awk -v x="$lpeak" 'BEGIN {print x / 1e6}')" "$accuracy"
done
