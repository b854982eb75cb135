#!/bin/bash
# The QDQ bert beside its float self on this machine, 2 threads, batch 1, seq 128, two rounds: kiln int8
# (compiled, integer_matmul on), kiln on the same model with KILN_INTEGER_MATMUL=0 (the float route), kiln
# fp32 (the zoo bert), ONNX Runtime int8 and fp32 (scripts/ort_run.js). usage: time_qdq_bert.sh QDIR
# (QDIR: bert_qdq.onnx from rebuild_qdq_bert.py and inputs/*.npy from the device run; the zoo bert in
# /tmp/zoo-bert from scripts/make_zoo_weights.py). Run from the repository root.
set -u
K=$PWD/build/kiln ORT=$PWD/scripts/ort_run.js
cd "$1"
KI="--input input_ids=inputs/input_ids.npy --input attention_mask=inputs/attention_mask.npy"
OI="input_ids=inputs/input_ids.npy attention_mask=inputs/attention_mask.npy"
for round in 1 2; do
  echo "round $round"
  $K run bert_qdq.onnx $KI --threads 2 --warmup 5 --iters 30 2>&1 | grep -E "^latency|prepared" | sed 's/^/  kiln int8: /'
  KILN_INTEGER_MATMUL=0 $K run bert_qdq.onnx $KI --threads 2 --warmup 5 --iters 30 2>&1 | grep -E "^latency" | sed 's/^/  kiln float route: /'
  $K run /tmp/zoo-bert/bert.onnx $KI --threads 2 --warmup 5 --iters 30 2>&1 | grep -E "^latency" | sed 's/^/  kiln fp32: /'
  node $ORT bert_qdq.onnx /tmp/ort_t --threads 2 --warmup 5 --iters 30 $OI 2>&1 | tail -1 | cut -c1-40 | sed 's/^/  ORT int8: /'
  node $ORT /tmp/zoo-bert/bert.onnx /tmp/ort_t --threads 2 --warmup 5 --iters 30 $OI 2>&1 | tail -1 | cut -c1-40 | sed 's/^/  ORT fp32: /'
done
