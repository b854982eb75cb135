#!/usr/bin/env bash
# One zoo model end to end: weights from the manifest, inputs from a seed, kiln eager, kiln compiled
# and kiln's fp64 reference, ONNX Runtime (onnxruntime-node) on the same inputs, then the accuracy rule.
# usage: zoo_check.sh KILN BUILD_DIR MODEL [--dim S=N]...
set -euo pipefail
kiln="$1" build="$2" model="$3"
shift 3
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$build/zoo/$model"
if ! command -v node >/dev/null || [ ! -d "$build/ort/node_modules/onnxruntime-node" ]; then
  echo "SKIPPED: ONNX Runtime is not installed (scripts/install_ort.sh $build/ort)"
  exit 77
fi
/usr/bin/python3 "$root/scripts/make_zoo_weights.py" "$model" "$work"
rm -rf "$work/inputs" "$work/eager" "$work/compiled" "$work/reference" "$work/ort"
"$kiln" run "$work/$model.onnx" "$@" --iters 1 --warmup 0 --seed 1 --threads 2 --save-inputs "$work/inputs" --output-dir "$work/eager"
feeds=()
for f in "$work"/inputs/*.npy; do feeds+=("--input" "$(basename "$f" .npy)=$f"); done
"$kiln" run "$work/$model.onnx" --iters 1 --warmup 0 --mode reference "${feeds[@]}" --output-dir "$work/reference" > /dev/null
"$kiln" run "$work/$model.onnx" --iters 1 --warmup 0 --mode compiled --threads 2 "${feeds[@]}" --output-dir "$work/compiled"
ort_feeds=()
for f in "$work"/inputs/*.npy; do ort_feeds+=("$(basename "$f" .npy)=$f"); done
KILN_ORT_DIR="$build/ort" node "$root/scripts/ort_run.js" "$work/$model.onnx" "$work/ort" --threads 2 "${ort_feeds[@]}" > /dev/null
echo "eager against ONNX Runtime:"
"$kiln" compare "$work/eager" "$work/ort" "$work/reference"
echo "compiled against ONNX Runtime:"
"$kiln" compare "$work/compiled" "$work/ort" "$work/reference"
