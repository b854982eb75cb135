# Sourced by the bench_*.sh scripts: the pieces they share. Expects $root and $build.
# median / smallest: of numbers on stdin, one a line. field NAME: a field of the JSON object on stdin.
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
smallest() { sort -g | head -1; }
field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

# prepare_model MODEL DIMS (DIMS: NAME=SIZE,...): the zoo model's weights made in $build/zoo/MODEL and one
# set of inputs saved there. Sets work (that folder), dim_args (--dim NAME=SIZE...), feeds (kiln's --input
# NAME=FILE...) and ort_feeds (scripts/ort_run.js's NAME=FILE...).
prepare_model() {
  local model=$1 dims=$2 p f
  work="$build/zoo/$model"
  /usr/bin/python3 "$root/scripts/make_zoo_weights.py" "$model" "$work"
  dim_args=()
  IFS=, read -ra pairs <<< "$dims"
  for p in "${pairs[@]}"; do dim_args+=(--dim "$p"); done
  "$build/kiln" run "$work/$model.onnx" --mode eager "${dim_args[@]}" --seed 1 --save-inputs "$work/bench_inputs" > /dev/null
  feeds=() ort_feeds=()
  for f in "$work"/bench_inputs/*.npy; do
    feeds+=(--input "$(basename "$f" .npy)=$f")
    ort_feeds+=("$(basename "$f" .npy)=$f")
  done
}
