#!/usr/bin/env bash
# Installs ONNX Runtime for Node.js (the CPU library ships inside the package) into DIR, the peer that
# the zoo tests compare against. Its install script would try to download CUDA binaries; it is skipped.
set -euo pipefail
dir="${1:?usage: install_ort.sh DIR}"
if [ -f "$dir/node_modules/onnxruntime-node/package.json" ]; then exit 0; fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"kiln-ort-peer","private":true}' > package.json
ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error onnxruntime-node@1.30.0
