#!/usr/bin/env bash
# Every hostile model in tests/data/malformed through `kiln run`: a bad one must end with exit code 1,
# a "kiln: error:" message and no output written; a valid_* control must run (exit 0). Nothing may
# crash or hang (each run has a time limit).
# usage: malformed_cli.sh KILN CORPUS_DIR
set -uo pipefail
kiln="$1" corpus="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0 checked=0
for model in "$corpus"/*.onnx; do
  name="$(basename "$model")"
  out="$work/out_$name"
  timeout 60 "$kiln" run "$model" --dim batch=2 --dim _in0_1=3 --output-dir "$out" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  checked=$((checked + 1))
  if [[ "$name" == valid_* ]]; then
    if [ $rc -ne 0 ]; then echo "FAIL $name: control exited $rc: $(head -c 300 "$work/stderr")"; failures=$((failures + 1)); fi
    continue
  fi
  if [ $rc -ne 1 ]; then
    echo "FAIL $name: exit code $rc (want 1): $(head -c 300 "$work/stderr")"; failures=$((failures + 1))
  elif ! grep -q "^kiln: error: " "$work/stderr"; then
    echo "FAIL $name: no 'kiln: error:' message"; failures=$((failures + 1))
  elif [ -e "$out" ]; then
    echo "FAIL $name: wrote output despite the error"; failures=$((failures + 1))
  fi
done
echo "$checked models, $failures failures"
[ $failures -eq 0 ]
