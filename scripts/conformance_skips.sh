#!/usr/bin/env bash
# Writes the skip list of an ONNX node conformance suite: every case `kiln check` skips, with the part
# of kiln's message that says why (after the node or input it names). tests/conformance_check.sh runs
# the suite with it, where any other skip, and a listed case that runs, fails.
# usage: conformance_skips.sh KILN CASES_DIR SUITE [KNOWN_FILE] > LIST, e.g.
#   scripts/conformance_skips.sh build/kiln build/conformance-onnx-1.23.1 \
#     "onnx 1.23.1 suite (tests/data/onnx-1.23.1-node.tar.xz)" tests/conformance_onnx-1.23.1_known.txt \
#     > tests/conformance_onnx-1.23.1_skips.txt
#   scripts/conformance_skips.sh build/kiln build/conformance "onnx 1.12 suite (scripts/gen_conformance.sh)" \
#     tests/conformance_known.txt > tests/conformance_onnx-1.12_skips.txt
set -euo pipefail
kiln="$1" cases="$2" suite="$3" known="${4:-}"
echo "# Cases of the $suite that kiln skips, each with (a part of) the reason kiln gives; written by"
echo "# scripts/conformance_skips.sh (eager mode). A case skipped for a reason not listed here, or listed"
echo "# here but passing, fails tests/conformance_check.sh: regenerate the list when kiln learns something."
"$kiln" check --mode eager ${known:+--known "$known"} "$cases"/node/test_* | grep '^SKIP ' | grep -v ': known deviation: ' |
  sed -E 's/^SKIP ([^:]+): (.*)$/\1  \2/; s/^([^ ]+)  [^ ]*model\.onnx: /\1  /; s/^([^ ]+)  (node|graph input|graph output|value_info) [^:]*: /\1  /' | sort
