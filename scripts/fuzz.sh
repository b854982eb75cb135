#!/usr/bin/env bash
# Runs one libFuzzer target of kiln (fuzz/, docs/FUZZING.md) for a given time.
#
#   scripts/fuzz.sh TARGET SECONDS [JOBS]     TARGET: onnx_import npy tensor_pb ir_parser settings saved_model capi
#                                             tuning_store
#   scripts/fuzz.sh all SECONDS [JOBS]        every target in turn, SECONDS each
#   scripts/fuzz.sh replay [TARGET]           no fuzzing: runs the seeds and every reproducer in
#                                             tests/data/fuzz_regressions/TARGET/ once (a quick check)
#   scripts/fuzz.sh unit                      no fuzzing: builds and runs sanitized_unit_tests, the unit
#                                             tests of the code the fuzzers reach, on the same ASan +
#                                             UBSan objects (exits 1 if a test fails or a sanitizer reports)
#
# Builds build-fuzz/ (clang, ASan + UBSan + libFuzzer) when needed. The seeds in fuzz/corpus/TARGET are
# copied into a working corpus, build-fuzz/corpus/TARGET, which keeps what earlier runs found; the seed
# folder is never written. Crashing inputs go to build-fuzz/crashes/TARGET/, the full log to
# build-fuzz/logs/. JOBS > 1 uses libFuzzer's fork mode (one process per job). Exits 1 if any run found
# a crash (or a timeout / out-of-memory), 2 on bad usage or a failed build.
# KILN_FUZZ_KEEP_GOING=1: fork mode that records each crash and goes on until SECONDS are used up
# (for a known crash that would otherwise end every run within minutes).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_FUZZ_DIR:-$root/build-fuzz}"
all_targets=(fuzz_onnx_import fuzz_npy fuzz_tensor_pb fuzz_ir_parser fuzz_settings fuzz_saved_model fuzz_capi
             fuzz_tuning_store)

usage() {
  echo "usage: $0 TARGET|all SECONDS [JOBS] | replay [TARGET] | unit   (targets: ${all_targets[*]})" >&2
  exit 2
}
mode=fuzz
if [[ "${1:-}" == unit ]]; then
  mode=unit
  [[ $# -eq 1 ]] || usage
  set -- all
elif [[ "${1:-}" == replay ]]; then
  mode=replay
  [[ $# -le 2 ]] || usage
  set -- "${2:-all}"
else
  [[ $# -ge 2 && $# -le 3 ]] || usage
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage
  seconds="$2"
  jobs="${3:-1}"
  [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || usage
fi

targets=()
if [[ "$1" == all ]]; then
  targets=("${all_targets[@]}")
else
  t="fuzz_${1#fuzz_}"
  [[ " ${all_targets[*]} " == *" $t "* ]] || usage
  targets=("$t")
fi

# Configure once (clang is required for libFuzzer); ninja rebuilds only what changed.
if ! grep -qs '^KILN_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DKILN_FUZZ=ON -DKILN_TESTS=OFF \
    -DKILN_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || { echo "fuzz.sh: configure failed" >&2; exit 2; }
fi
build_targets=("${targets[@]}")
[[ $mode == unit ]] && build_targets=(sanitized_unit_tests)
ninja -C "$build" "${build_targets[@]}" >/dev/null || {
  echo "fuzz.sh: build failed; run: ninja -C $build ${build_targets[*]}" >&2
  exit 2
}

# Leaks count as findings; UB stops at once (the build also has -fno-sanitize-recover=undefined).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export OMP_NUM_THREADS=1  # constant folding runs kernels; keep each fuzzing process on one core

if [[ $mode == unit ]]; then
  export TMPDIR="$build/tmp/unit"
  rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
  log="$build/logs/unit-$(date +%Y%m%d-%H%M%S).log"
  mkdir -p "$build/logs"
  start=$(date +%s)
  "$build/fuzz/sanitized_unit_tests" --gtest_brief=1 >"$log" 2>&1
  rc=$?
  rm -rf "$TMPDIR"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |ERROR: |runtime error: |SUMMARY: " "$log" | head -n 40
  if [[ $rc -ne 0 ]]; then
    echo "sanitized_unit_tests: FAILED (exit $rc) after $(( $(date +%s) - start ))s; log $log"
    tail -n 40 "$log"
    exit 1
  fi
  echo "sanitized_unit_tests: passed under ASan + UBSan in $(( $(date +%s) - start ))s"
  exit 0
fi

if [[ $mode == replay ]]; then
  status=0
  for target in "${targets[@]}"; do
    export TMPDIR="$build/tmp/$target"
    mkdir -p "$TMPDIR"
    if "$build/fuzz/$target" -runs=0 "$root/fuzz/corpus/$target" >"$TMPDIR/seeds.log" 2>&1; then
      echo "$target: seeds ok"
    else
      echo "$target: seeds FAIL"; tail -n 30 "$TMPDIR/seeds.log"; status=1
    fi
    for f in "$root/tests/data/fuzz_regressions/$target"/*; do
      [[ -f "$f" && "$f" != *.md ]] || continue
      if "$build/fuzz/$target" "$f" >"$TMPDIR/one.log" 2>&1; then
        echo "$target: ok   ${f#"$root"/}"
      else
        echo "$target: FAIL ${f#"$root"/}"; grep -A2 '==kiln-fuzz==\|ERROR:' "$TMPDIR/one.log" | head -n 6; status=1
      fi
    done
    rm -rf "$TMPDIR"
  done
  exit $status
fi

status=0
summary=()
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  crashes="$build/crashes/$target"
  mkdir -p "$corpus" "$crashes" "$build/logs"
  cp -n "$root/fuzz/corpus/$target/"* "$corpus/" 2>/dev/null || true
  log="$build/logs/$target-$(date +%Y%m%d-%H%M%S).log"
  before=$(find "$crashes" -type f | wc -l)

  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
        -artifact_prefix="$crashes/")
  [[ -f "$root/fuzz/$target.dict" ]] && args+=(-dict="$root/fuzz/$target.dict")
  if [[ "${KILN_FUZZ_KEEP_GOING:-0}" == 1 ]]; then
    args+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  elif [[ "$jobs" -gt 1 ]]; then
    args+=(-fork="$jobs")
  fi
  # The targets' scratch folders (and fork mode's files) go here, so that a crashed run leaves
  # nothing in /tmp.
  export TMPDIR="$build/tmp/$target"
  rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
  echo "== $target: ${seconds}s, $jobs job(s); log $log"
  start=$(date +%s)
  (cd "$build" && "$build/fuzz/$target" "${args[@]}" "$corpus") >"$log" 2>&1
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  rm -rf "$TMPDIR"

  # Plain mode prints final stats; fork mode only its progress lines ("#N: cov: ...").
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  [[ -z "$execs" ]] && execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  after=$(find "$crashes" -type f | wc -l)
  found=$((after - before))
  units=$(find "$corpus" -type f | wc -l)
  if [[ $rc -ne 0 || $found -gt 0 ]]; then
    status=1
    line="$target: ${elapsed}s, ${execs:-?} executions, corpus $units files: CRASH (exit $rc, $found new file(s) in $crashes)"
    echo "--- last lines of $log:"
    tail -n 40 "$log"
  else
    line="$target: ${elapsed}s, ${execs:-?} executions, corpus $units files: no crash"
  fi
  echo "$line"
  summary+=("$line")
done

if [[ ${#targets[@]} -gt 1 ]]; then
  echo "== summary"
  printf '%s\n' "${summary[@]}"
fi
exit $status
