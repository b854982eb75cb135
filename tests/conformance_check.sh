#!/usr/bin/env bash
# Runs `kiln check` on every ONNX node test case of one suite. Cases whose operators kiln does not
# support are counted as skipped; any failure fails the test.
# usage: conformance_check.sh KILN CASES_DIR [MODE [SUITE]]
#   SUITE onnx-1.12 (default): the cases scripts/gen_conformance.sh makes with Debian's onnx, with
#     conformance_known.txt (deliberate deviations) and conformance_onnx-1.12_skips.txt;
#   SUITE onnx-1.23.1: the cases of tests/data/onnx-1.23.1-node.tar.xz (conformance_unpack.sh), with
#     conformance_onnx-1.23.1_known.txt and conformance_onnx-1.23.1_skips.txt.
# A skip list names every case kiln skips with its reason (scripts/conformance_skips.sh writes it): a
# case skipped for another reason, or listed but passing, fails the test, so the list cannot rot.
set -euo pipefail
kiln="$1" cases="$2" mode="${3:-eager}" suite="${4:-onnx-1.12}"
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f "$cases/.complete" ]; then
  echo "SKIPPED: no conformance cases in $cases (run scripts/gen_conformance.sh $cases)"
  exit 77
fi
case "$suite" in
  onnx-1.12) lists=(--known "$here/conformance_known.txt" --skips "$here/conformance_onnx-1.12_skips.txt") ;;
  onnx-1.23.1) lists=(--known "$here/conformance_onnx-1.23.1_known.txt" --skips "$here/conformance_onnx-1.23.1_skips.txt") ;;
  *) echo "unknown suite '$suite'" >&2; exit 2 ;;
esac
"$kiln" check --quiet --mode "$mode" "${lists[@]}" "$cases"/node/test_*
