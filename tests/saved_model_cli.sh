#!/usr/bin/env bash
# kiln compile MODEL -o MODEL.kiln, then kiln run MODEL.kiln in a fresh cache: no compiler process
# may start while it loads (the compiler kiln is given is a wrapper that logs every start, --version
# included), nothing is benchmarked, and its outputs are byte-identical to kiln run MODEL.onnx. A
# damaged copy, another setting and other sizes are refused. The load's preparation time is printed
# (never asserted). usage: saved_model_cli.sh KILN SOURCE_DIR
set -uo pipefail
kiln="$1" root="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

model=distilbert dims=(--dim batch=1 --dim seq=8)
/usr/bin/python3 "$root/scripts/make_zoo_weights.py" "$model" "$work/zoo" > /dev/null || fail "make_zoo_weights.py"
cat > "$work/cxx" <<EOF
#!/bin/sh
echo "\$@" >> "$work/compiler.log"
exec c++ "\$@"
EOF
chmod +x "$work/cxx"
export KILN_CXX="$work/cxx" KILN_CACHE_DIR="$work/cache"

"$kiln" compile "$work/zoo/$model.onnx" "${dims[@]}" -o "$work/$model.kiln" > "$work/compile.log" 2>&1 ||
  { cat "$work/compile.log"; fail "kiln compile -o"; }
grep -q "^saved $work/$model.kiln" "$work/compile.log" || { cat "$work/compile.log"; fail "compile -o said nothing of the file"; }
[ -s "$work/compiler.log" ] || fail "the compile never ran the compiler wrapper (the test would prove nothing)"
# The .onnx run takes the picks the compile stored and the defaults it took (a busy machine can spend the
# autotune budget mid-compile), as the saved model does: a fresh budget would tune those ops anew.
"$kiln" --set autotune_budget_s=0 run "$work/zoo/$model.onnx" "${dims[@]}" --seed 5 --iters 1 --warmup 0 --output-dir "$work/onnx-out" \
  > "$work/onnx-run.log" 2>&1 || { cat "$work/onnx-run.log"; fail "kiln run of the .onnx"; }

# The saved model in a fresh process with an empty cache folder.
starts=$(wc -l < "$work/compiler.log")
KILN_CACHE_DIR="$work/empty-cache" "$kiln" run "$work/$model.kiln" --seed 5 --iters 1 --warmup 0 --json \
  --output-dir "$work/saved-out" > "$work/saved-run.json" 2> "$work/saved-run.err" ||
  { cat "$work/saved-run.err"; fail "kiln run of the saved model"; }
[ "$(wc -l < "$work/compiler.log")" -eq "$starts" ] ||
  { tail -n +$((starts + 1)) "$work/compiler.log" | head -3; fail "loading the saved model started the compiler"; }
[ ! -e "$work/empty-cache/tuning.sqlite" ] || fail "loading the saved model wrote the caller's tuning store"
outputs=0
for f in "$work/onnx-out"/*.npy; do
  cmp "$f" "$work/saved-out/$(basename "$f")" || fail "$(basename "$f") differs between the .onnx and the saved model"
  outputs=$((outputs + 1))
done
[ $outputs -gt 0 ] || fail "kiln run wrote no outputs"
/usr/bin/python3 - "$work/saved-run.json" <<'PY' || fail "the saved model's run report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r.get("autotune_benchmarks", 0) == 0, r
print(f"saved model prepared in {r['prepare_ms']:.1f} ms (not asserted)")
PY

refused() {  # refused EXPECTED_TEXT ARGS...: kiln ARGS must fail with a message containing it
  local want="$1"; shift
  if KILN_CACHE_DIR="$work/empty-cache" "$kiln" "$@" --iters 1 --warmup 0 > "$work/refused.log" 2>&1; then
    fail "kiln run $* succeeded"
  fi
  grep -qF "$want" "$work/refused.log" || { cat "$work/refused.log"; fail "kiln run $*: no '$want'"; }
}
cp "$work/$model.kiln" "$work/damaged.kiln"
printf '\x7f' | dd of="$work/damaged.kiln" bs=1 seek=$(( $(stat -c %s "$work/damaged.kiln") / 3 )) conv=notrunc status=none
refused "damaged" run "$work/damaged.kiln"
refused "compiled with autotune=fast" --set autotune=max run "$work/$model.kiln"
refused "compiled for seq=8" run "$work/$model.kiln" --dim seq=9
echo "saved $model: loaded with no compiler start and no benchmark, $outputs outputs identical; damaged, resized and re-set runs refused"
