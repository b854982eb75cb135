#!/bin/bash
# The CUDA backend on the GPU machine, in two halves.
#   scripts/device_run.sh pack [BUILD]   here: kiln, test_cuda and the shared libraries they link (not the
#                                         C/C++ runtime, which the GPU machine has) as .dev/bundle.tar.xz
#                                         (git-ignored), to travel as the device tool's `carry: [".dev"]`
#   scripts/device_run.sh run [MODELS]   there: the CUDA tests, then each zoo model (default: all) on the
#                                         GPU in fp32 against the CPU (kiln compare: the accuracy rule, the
#                                         CPU's fp64 reference as the oracle) and timed beside it, then
#                                         compute-sanitizer over the tests (memcheck: KILN_DEVICE_MEMCHECK_S
#                                         per binary, default 240; racecheck of the shared-memory kernels:
#                                         KILN_DEVICE_RACECHECK_S, default 150; 0 skips); results under $OUT.
#                                         KILN_DEVICE_TORCH=fp32 also times PyTorch (scripts/torch_peer.py:
#                                         eager, torch.compile default and reduce-overhead) in the same call.
#                                         KILN_DEVICE_PRECISIONS="bf16 fp16" (default bf16) also runs each
#                                         model with --precision P on the GPU (graphs), compared with
#                                         `kiln compare --low-precision` against the CPU's fp32 outputs.
#                                         KILN_DEVICE_AB="NAME=VALUE ..." runs each precision's side a second
#                                         time with those settings (side cuda-P-ab), for A/B runs.
#                                         KILN_DEVICE_PROFILE=1 (off by default) also runs `kiln profile
#                                         --device cuda` on each model (in KILN_DEVICE_PROFILE_PRECISION,
#                                         default fp32): text, JSON, trace and HTML under $OUT/MODEL/profile.*.
#                                         KILN_DEVICE_NCU=1 (off by default) also times each kernel of one replayed
#                                         run under ncu (--graph-profiling node, in KILN_DEVICE_PROFILE_PRECISION):
#                                         $OUT/MODEL/ncu.csv, grouped by scripts/ncu_kernels.py into ncu.txt.
# The GPU machine (Ubuntu 24.04, driver 580, CUDA 13) runs binaries built here on Debian 12 when the
# libraries travel with them; its python3 has numpy, which scripts/make_zoo_weights.py needs.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=/tmp/kiln-device-bin  # where the bundle is unpacked (both sides)

pack() {
  local build=${1:-build}
  rm -rf "$BIN" .dev && mkdir -p "$BIN/lib" .dev
  cp "$build/kiln" "$build/tests/test_cuda" "$build/tests/test_cuda_session" "$build/tests/test_bench" "$BIN/"
  # Every library the binaries resolve, but the C and C++ runtimes and the loader.
  for lib in $( (ldd "$build/kiln"; ldd "$build/tests/test_cuda"; ldd "$build/tests/test_cuda_session"; ldd "$build/tests/test_bench") | awk '$3 ~ /^\// {print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|libpthread.so*|libdl.so*|librt.so*) ;;
      *) cp -L "$lib" "$BIN/lib/" ;;
    esac
  done
  strip --strip-unneeded "$BIN/kiln" "$BIN/test_cuda" "$BIN/test_cuda_session" "$BIN/test_bench" 2>/dev/null || true
  # The device tool carries at most 64 MiB: xz brings the ~90 MB down to about a fifth.
  tar -C "$BIN" -cf - . | xz -T0 -6 > .dev/bundle.tar.xz
  du -sh .dev/bundle.tar.xz
}

# sanitize TOOL SECONDS BINARY FILTER: one compute-sanitizer run, its log under $out/TOOL-BINARY.txt.
sanitize() {
  local tool=$1 seconds=$2 binary=$3 filter=$4 log="$out/$1-$3.txt" rc=0
  (cd /tmp && timeout "$seconds" compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 \
    "$BIN/$binary" --gtest_brief=1 --gtest_filter="$filter") > "$log" 2>&1 || rc=$?
  case $rc in
    0) echo "$tool $binary ($filter): clean" ;;
    124) echo "$tool $binary ($filter): cut short after ${seconds} s (what ran is in the log)" ;;
    9) echo "$tool $binary ($filter): ERRORS" ;;
    *) echo "$tool $binary ($filter): tests FAILED (rc $rc)" ;;
  esac
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED|^\[  FAILED" "$log" | tail -3 | sed 's/^/    /' || true
}

run() {
  local out=${OUT:-/tmp/kiln-device}
  mkdir -p "$out" "$BIN"
  xz -dc .dev/bundle.tar.xz | tar -C "$BIN" -xf -
  export LD_LIBRARY_PATH=$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export KILN_CACHE_DIR=/tmp/kiln-cache
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
  if [ "${KILN_DEVICE_TESTS:-1}" = 1 ]; then
    # Not the host emulation of the row kernels (CPU only, minutes: CI runs it); the GPU cases run here.
    "$BIN/test_cuda" --gtest_brief=1 --gtest_filter='-*Emulat*' > "$out/test_cuda.txt" 2>&1 \
      && echo "test_cuda: passed" || echo "test_cuda: FAILED (rc $?)"
    grep -E "^\[  FAILED|^\[  PASSED|^\[  SKIPPED \]" "$out/test_cuda.txt" | head -20
    (cd /tmp && "$BIN/test_cuda_session" --gtest_brief=1) > "$out/test_cuda_session.txt" 2>&1 \
      && echo "test_cuda_session: passed" || echo "test_cuda_session: FAILED (rc $?)"
    grep -E "^\[  FAILED|^\[  PASSED|^\[  SKIPPED \]|Failure|error" "$out/test_cuda_session.txt" | head -20
    # `kiln profile` / `kiln bench` with --device cuda through the unpacked kiln (run from here: they find
    # scripts/torch_peer.py in the current folder).
    KILN_TEST_BINARY=$BIN/kiln "$BIN/test_bench" --gtest_brief=1 --gtest_filter='DeviceCli.*' > "$out/test_bench_device.txt" 2>&1 \
      && echo "test_bench DeviceCli: passed" || echo "test_bench DeviceCli: FAILED (rc $?)"
    grep -E "^\[  FAILED|^\[  PASSED|^\[  SKIPPED \]|Failure" "$out/test_bench_device.txt" | head -20
  fi
  local models=${*:-bert distilbert gpt2 vit trocr_small resnet18}
  for m in $models; do
    local dims
    case $m in  # batch 1 at the sizes of lab/GPU.md's anchors
      bert|distilbert|gpt2) dims="--dim batch=1 --dim seq=128" ;;
      trocr_small) dims="--dim batch=1 --dim dec_seq=32" ;;
      *) dims="--dim batch=1" ;;
    esac
    local dir=/tmp/zoo-$m
    mkdir -p "$out/$m"
    [ -f "$dir/$m.onnx" ] || python3 scripts/make_zoo_weights.py "$m" "$dir" > /dev/null
    # cuda-launches first (a cold kernel cache: it compiles), then cuda (a second process on a warm
    # cache, replaying one CUDA graph per run), then the CPU.
    local precisions=${KILN_DEVICE_PRECISIONS-bf16} sides="cuda-launches cuda cpu"
    for p in $precisions; do sides="$sides cuda-$p"; done
    [ -n "${KILN_DEVICE_AB:-}" ] && for p in $precisions; do sides="$sides cuda-$p-ab"; done
    for side in $sides; do
      local graphs=1 device=$side precision=fp32 ab=""
      [ $side = cuda-launches ] && graphs=0 device=cuda
      case $side in cuda-bf16|cuda-fp16) device=cuda precision=${side#cuda-} ;; esac
      case $side in *-ab) device=cuda precision=${side#cuda-} precision=${precision%-ab} ab=$KILN_DEVICE_AB ;; esac
      env $ab KILN_CUDA_GRAPHS=$graphs "$BIN/kiln" run "$dir/$m.onnx" --device $device --precision $precision $dims --seed 1 \
        --output-dir "$out/$m/$side" --warmup 5 --iters 50 > "$out/$m/$side.txt" 2>&1 \
        || echo "$m $side: FAILED: $(tail -2 "$out/$m/$side.txt")"
    done
    "$BIN/kiln" run "$dir/$m.onnx" --mode reference $dims --seed 1 --output-dir "$out/$m/reference" > /dev/null 2>&1 || true
    echo "== $m"
    for side in $sides; do
      echo "  $side: $(grep -ho "prepared in .*" "$out/$m/$side.txt"); $(grep -h "latency" "$out/$m/$side.txt")"
    done
    for side in cuda-launches cuda; do
      "$BIN/kiln" compare "$out/$m/$side" "$out/$m/cpu" "$out/$m/reference" 2>&1 | tail -2 | sed "s/^/  $side vs cpu: /" || true
    done
    for side in $sides; do
      case $side in cuda-bf16*|cuda-fp16*)
        "$BIN/kiln" compare --low-precision "$out/$m/$side" "$out/$m/cpu" "$out/$m/reference" 2>&1 | tail -2 \
          | sed "s/^/  $side vs cpu fp32: /" || true ;;
      esac
    done
    if [ "${KILN_DEVICE_PROFILE:-0}" = 1 ]; then  # device time per kernel (stream launches) beside the graph replay
      KILN_PRECISION=${KILN_DEVICE_PROFILE_PRECISION:-fp32} "$BIN/kiln" profile "$dir/$m.onnx" --device cuda $dims --seed 1 --warmup 5 --iters 20 \
        --json "$out/$m/profile.json" --trace "$out/$m/profile_trace.json" --html "$out/$m/profile.html" \
        > "$out/$m/profile.txt" 2>&1 || echo "$m profile: FAILED: $(tail -2 "$out/$m/profile.txt")"
      grep -h "end to end on\|coverage" "$out/$m/profile.txt" | sed "s/^ */  profile: /" || true
    fi
    if [ "${KILN_DEVICE_NCU:-0}" = 1 ]; then  # each kernel node of a replayed run, timed alone by ncu
      timeout 300 ncu --graph-profiling node --metrics gpu__time_duration.sum,dram__bytes.sum --cache-control none \
        --clock-control none --csv --page raw "$BIN/kiln" run "$dir/$m.onnx" --device cuda \
        --precision "${KILN_DEVICE_PROFILE_PRECISION:-fp32}" $dims --seed 1 --warmup 1 --iters 2 > "$out/$m/ncu.csv" 2>&1 \
        && python3 scripts/ncu_kernels.py "$out/$m/ncu.csv" > "$out/$m/ncu.txt" 2>&1 \
        && head -8 "$out/$m/ncu.txt" | sed "s/^/  ncu: /" || echo "$m ncu: FAILED: $(tail -2 "$out/$m/ncu.csv")"
    fi
  done
  if [ -n "${KILN_DEVICE_TORCH:-}" ]; then  # the PyTorch peer, in this same call (GPU numbers count only so)
    timeout "${KILN_DEVICE_TORCH_S:-300}" python3 scripts/torch_peer.py --models "$(echo $models | tr ' ' ,)" \
      --dtypes "${KILN_DEVICE_TORCH:-fp32}" --modes eager,default,reduce-overhead \
      --budget "$(( ${KILN_DEVICE_TORCH_S:-300} - 20 ))" --out "$out/torch" 2>&1 | tail -20
  fi
  # compute-sanitizer last: the slowest part, each run cut at its time limit (a cut run says so). memcheck
  # over both test binaries (every kernel, the session's graphs and copies); racecheck over the tests
  # whose kernels share memory between threads (the row kernels' block reductions, attention's tiles).
  local memcheck_s=${KILN_DEVICE_MEMCHECK_S:-240} racecheck_s=${KILN_DEVICE_RACECHECK_S:-150}
  if [ "$memcheck_s" -gt 0 ]; then
    # Not GemmTemplateNvrtc.* (NVRTC compiles only, no device memory: minutes under the tool for nothing)
    # nor the row kernels' host emulation (CPU only); both run without the tool above.
    sanitize memcheck "$memcheck_s" test_cuda "*:-GemmTemplateNvrtc.*:*Emulat*"
    sanitize memcheck "$memcheck_s" test_cuda_session "*"
  fi
  if [ "$racecheck_s" -gt 0 ]; then
    sanitize racecheck "$racecheck_s" test_cuda "Cases/CudaRowGpu.*"
    sanitize racecheck "$racecheck_s" test_cuda_session "CudaAttention.*"
  fi
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 pack [BUILD] | run [MODELS...]" >&2; exit 2 ;;
esac
