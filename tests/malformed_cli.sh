#!/usr/bin/env bash
# Every hostile model in a corpus folder (tests/data/malformed) through `kiln run`: a bad one must end
# with exit code 1, a "kiln: error:" message and no output written; a valid_* control must run (exit 0)
# and write its outputs. Nothing may crash or hang (each run has a time limit).
# usage: malformed_cli.sh KILN CORPUS_DIR
# KILN_CORPUS_MODES="compiled eager reference" runs every model in each of those modes; unset, each model
# runs once in kiln's default mode (compiled).
set -uo pipefail
kiln="$1" corpus="$2"
read -r -a modes <<<"${KILN_CORPUS_MODES:-default}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0 checked=0
for model in "$corpus"/*.onnx; do
  name="$(basename "$model")"
  for mode in "${modes[@]}"; do
    mode_args=() label="$name"
    if [ "$mode" != default ]; then mode_args=(--mode "$mode") label="$name ($mode)"; fi
    out="$work/out_$name"
    rm -rf "$out"
    timeout 60 "$kiln" run "$model" --iters 1 --warmup 0 "${mode_args[@]}" --output-dir "$out" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    # A model with symbolic input dims runs again with a size for each (batch=2, any other 3): kiln
    # refuses a --dim the model does not have, so the sizes come from its own message.
    symbols="$(sed -n 's/.*symbolic dimensions without a size: \([^(]*\) (give each.*/\1/p' "$work/stderr")"
    if [ $rc -eq 1 ] && [ -n "$symbols" ]; then
      dim_args=()
      IFS=', ' read -r -a symbol_list <<<"$symbols"  # split, never glob (a hostile model names them)
      for s in "${symbol_list[@]}"; do
        if [ "$s" = batch ]; then dim_args+=(--dim batch=2); else dim_args+=(--dim "$s=3"); fi
      done
      timeout 60 "$kiln" run "$model" --iters 1 --warmup 0 "${mode_args[@]}" "${dim_args[@]}" --output-dir "$out" \
        >"$work/stdout" 2>"$work/stderr"
      rc=$?
    fi
    checked=$((checked + 1))
    if [[ "$name" == valid_* ]]; then
      if [ $rc -ne 0 ]; then
        echo "FAIL $label: control exited $rc: $(head -c 300 "$work/stderr")"; failures=$((failures + 1))
      elif ! compgen -G "$out/*.npy" >/dev/null; then
        echo "FAIL $label: control wrote no outputs"; failures=$((failures + 1))
      fi
      continue
    fi
    if [ $rc -ne 1 ]; then
      echo "FAIL $label: exit code $rc (want 1): $(head -c 300 "$work/stderr")"; failures=$((failures + 1))
    elif ! grep -q "^kiln: error: " "$work/stderr"; then
      echo "FAIL $label: no 'kiln: error:' message"; failures=$((failures + 1))
    elif [ -e "$out" ]; then
      echo "FAIL $label: wrote output despite the error"; failures=$((failures + 1))
    fi
  done
done
echo "$checked runs, $failures failures"
[ $failures -eq 0 ]
