#!/usr/bin/env bash
# Generates the ONNX node test cases (922 with Debian's python3-onnx 1.12) into DIR/node, offline.
# onnx 1.12's generator still uses numpy aliases (np.float, np.int, np.bool, np.object) that numpy
# 1.24 removed, so they are restored before import.
set -euo pipefail
out="${1:?usage: gen_conformance.sh DIR}"
if [ -f "$out/.complete" ]; then exit 0; fi
rm -rf "$out"
mkdir -p "$out"
/usr/bin/python3 - "$out" <<'PY'
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np
for alias, real in (("float", float), ("int", int), ("bool", bool), ("object", object), ("complex", complex), ("str", str)):
    if alias not in np.__dict__:
        setattr(np, alias, real)
from onnx.backend.test.cmd_tools import main
sys.argv = ["generate-data", "generate-data", "-o", sys.argv[1]]
main()
PY
touch "$out/.complete"
echo "conformance cases: $(ls "$out/node" | wc -l) in $out/node"
