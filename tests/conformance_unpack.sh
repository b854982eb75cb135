#!/usr/bin/env bash
# Unpacks a tarball of ONNX node test cases (node/<case>/...) into DIR once; DIR/.complete marks it done.
# usage: conformance_unpack.sh TARBALL DIR
set -euo pipefail
tarball="$1" out="$2"
if [ -f "$out/.complete" ] && [ "$out/.complete" -nt "$tarball" ]; then exit 0; fi
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
tar -C "$out.tmp" -xJf "$tarball"
touch "$out.tmp/.complete"
mv "$out.tmp" "$out"
echo "conformance cases: $(ls "$out/node" | wc -l) in $out/node"
