#!/usr/bin/env bash
# Runs `kiln check` on every ONNX node test case (scripts/gen_conformance.sh makes them). Cases whose
# operators kiln does not support are counted as skipped; any failure fails the test.
# usage: conformance_check.sh KILN CASES_DIR [MODE]
set -euo pipefail
kiln="$1" cases="$2" mode="${3:-eager}"
if [ ! -f "$cases/.complete" ]; then
  echo "SKIPPED: no conformance cases in $cases (run scripts/gen_conformance.sh $cases)"
  exit 77
fi
"$kiln" check --quiet --mode "$mode" --known "$(dirname "$0")/conformance_known.txt" "$cases"/node/test_*
