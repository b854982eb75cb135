#!/usr/bin/env bash
# kiln as a package: `cmake --install` into a fresh prefix, then a C++ program built against it twice (CMake's
# find_package(kiln) and pkg-config kiln), a C program on the C API (pkg-config) and Python importing the
# installed module run a zoo model (distilbert, seq 8, weights from the manifest)
# and must write the same output bytes as `kiln run` on the same inputs (autotuning off, so that both
# processes run the same kernels). Also: the library exports only the public API and has an SONAME, the
# installed headers include only installed headers, and add_subdirectory of the checkout configures.
# usage: package_test.sh BUILD_DIR
set -euo pipefail
build="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
export KILN_AUTOTUNE=off KILN_CACHE_DIR="$work/cache"

cmake --install "$build" --prefix "$prefix" > "$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
lib="$(ls "$prefix"/lib/libkiln.so.*.*.* 2>/dev/null | head -1 || true)"
[ -n "$lib" ] || { echo "FAIL: no libkiln.so.X.Y.Z under $prefix/lib"; ls -R "$prefix"; exit 1; }
for f in bin/kiln include/kiln/session.h include/kiln/graph.h lib/cmake/kiln/kilnConfig.cmake \
         lib/cmake/kiln/kilnConfigVersion.cmake lib/pkgconfig/kiln.pc lib/libkiln.so; do
  [ -e "$prefix/$f" ] || { echo "FAIL: the install has no $f"; exit 1; }
done
soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
[ "$soname" = libkiln.so.0 ] || { echo "FAIL: SONAME is '$soname', want libkiln.so.0"; exit 1; }
# The exports: kiln's public API only, none of its internals or of what it links (fmt, protobuf, ...).
nm -D --defined-only "$lib" | awk '{print $3}' | c++filt > "$work/exports.txt"
for internal in "kiln::run_node(" "kiln::infer_shapes(" "fmt::" "google::protobuf::"; do
  if grep -qF "$internal" "$work/exports.txt"; then echo "FAIL: libkiln.so exports $internal"; exit 1; fi
done
grep -qF "kiln::Session::load_onnx(" "$work/exports.txt" || { echo "FAIL: Session::load_onnx is not exported"; exit 1; }
# Public headers include only public headers.
if grep -rn '#include "' "$prefix/include/kiln" | grep -v '#include "kiln/'; then
  echo "FAIL: an installed header includes a header that is not installed"; exit 1
fi

cmake -S "$root/tests/package/consumer" -B "$work/consumer-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
ninja -C "$work/consumer-cmake" >> "$work/consumer.log" || { cat "$work/consumer.log"; exit 1; }
# The C API from C (C99, warnings as errors), with pkg-config.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cc -std=c99 -Wall -Wextra -Werror -O1 -o "$work/c-consumer" \
  "$root/tests/package/c_consumer/main.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kiln)
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" c++ -std=c++20 -O1 -o "$work/consumer-pkgconfig" "$root/tests/package/consumer/main.cpp" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kiln)

# add_subdirectory of the checkout configures (kiln's paths are its own, its tests off by default).
cmake -S "$root/tests/package/subdirectory" -B "$work/subdirectory" -G Ninja -DKILN_SOURCE="$root" \
  > "$work/subdirectory.log" 2>&1 || { tail -20 "$work/subdirectory.log"; echo "FAIL: add_subdirectory"; exit 1; }

model=distilbert dims=(--dim batch=1 --dim seq=8)
/usr/bin/python3 "$root/scripts/make_zoo_weights.py" "$model" "$work/zoo" > /dev/null
"$prefix/bin/kiln" run "$work/zoo/$model.onnx" "${dims[@]}" --seed 1 --iters 1 --warmup 0 \
  --save-inputs "$work/inputs" --output-dir "$work/kiln-out" > "$work/run.log"
"$work/consumer-cmake/consumer" "$work/zoo/$model.onnx" "$work/inputs" "$work/cmake-out" batch=1 seq=8
LD_LIBRARY_PATH="$prefix/lib" "$work/consumer-pkgconfig" "$work/zoo/$model.onnx" "$work/inputs" "$work/pkgconfig-out" batch=1 seq=8 > /dev/null
mkdir -p "$work/c-out"
LD_LIBRARY_PATH="$prefix/lib" "$work/c-consumer" "$work/zoo/$model.onnx" "$work/inputs" "$work/c-out" batch=1 seq=8
outputs=0
for f in "$work/kiln-out"/*.npy; do
  for side in cmake-out pkgconfig-out; do
    cmp "$f" "$work/$side/$(basename "$f")" || { echo "FAIL: $side/$(basename "$f") differs from kiln run's"; exit 1; }
  done
  # The C program wrote the raw elements: the end of kiln's .npy, after its header.
  raw="$work/c-out/$(basename "$f" .npy).bin"
  [ -s "$raw" ] || { echo "FAIL: the C program wrote no $(basename "$raw")"; exit 1; }
  tail -c "$(stat -c %s "$raw")" "$f" | cmp - "$raw" || { echo "FAIL: the C API's $(basename "$raw") differs"; exit 1; }
  outputs=$((outputs + 1))
done
[ $outputs -gt 0 ] || { echo "FAIL: kiln run wrote no outputs"; exit 1; }

# The Python module from the install, on the same inputs: numpy arrays with the same bytes.
if ! compgen -G "$build/python/kiln*.so" > /dev/null; then
  echo "SKIPPED (the rest passed): this build has no Python module (python3-dev and pybind11-dev missing at configure)"
  exit 77
fi
PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 - "$work" "$model" <<'PY'
import os, sys
import numpy as np
import kiln
work, model = sys.argv[1], sys.argv[2]
assert kiln.__file__.startswith(os.path.join(work, "prefix")), kiln.__file__
session = kiln.Session(os.path.join(work, "zoo", model + ".onnx"), dims={"batch": 1, "seq": 8})
feeds = {i["name"]: np.load(os.path.join(work, "inputs", i["name"] + ".npy")) for i in session.inputs}
for name, got in session.run(feeds).items():
    want = np.load(os.path.join(work, "kiln-out", name + ".npy"))
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        sys.exit(f"FAIL: the Python module's {name} differs from kiln run's")
PY
echo "package: installed, $outputs output(s) of $model identical from kiln run, find_package, pkg-config, the C API and Python"
