#!/usr/bin/env bash
# Builds kiln and runs every test: unit tests, the ONNX conformance cases, the hostile-model corpus
# and the zoo models against ONNX Runtime.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" --test
"$root/scripts/gen_conformance.sh" "$build/conformance"
"$root/scripts/install_ort.sh" "$build/ort"
cd "$build"
ctest --output-on-failure -j2 --timeout 1200
