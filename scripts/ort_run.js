#!/usr/bin/env node
// Runs a model with ONNX Runtime (onnxruntime-node, CPU) on .npy inputs and writes .npy outputs:
// the peer and oracle kiln is compared against.
// usage: ort_run.js MODEL OUT_DIR [--threads N] [--iters N] [--warmup N] [--optimization LEVEL] NAME=FILE.npy...
// (LEVEL: ONNX Runtime's graph optimization level, disabled, basic, extended or all, the default)
// Prints one JSON line: {"latency_ms": median, "times_ms": [...], "outputs": [...]}.
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  const dirs = [process.env.KILN_ORT_DIR, path.join(__dirname, '..', 'build', 'ort')].filter(Boolean);
  for (const d of dirs) {
    try { return require(path.join(d, 'node_modules', 'onnxruntime-node')); } catch (e) { /* next */ }
  }
  try { return require('onnxruntime-node'); } catch (e) {
    console.error('ort_run: onnxruntime-node is not installed; run scripts/install_ort.sh build/ort');
    process.exit(3);
  }
}

// float16 travels as its bit patterns (onnxruntime-node takes and gives a Uint16Array for it).
const NPY_TYPES = { '<f4': ['float32', Float32Array], '<f2': ['float16', Uint16Array], '<f8': ['float64', Float64Array],
  '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array] };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran order`);
  const [type, Arr] = NPY_TYPES[descr] || (() => { throw new Error(`${file}: dtype ${descr}`); })();
  const off = start + hlen;
  const bytes = buf.subarray(off);
  const copy = new Uint8Array(bytes.length); copy.set(bytes);
  let data = new Arr(copy.buffer, 0, bytes.length / Arr.BYTES_PER_ELEMENT);
  if (type === 'bool') data = Uint8Array.from(data);
  return { type, shape, data };
}

function writeNpy(file, tensor) {
  const entry = Object.entries(NPY_TYPES).find(([, [t]]) => t === tensor.type);
  if (!entry) throw new Error(`cannot write dtype ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1'); pre[6] = 1; pre[7] = 0; pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  const body = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  fs.writeFileSync(file + '.part', Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(file + '.part', file);
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { threads: 0, iters: 1, warmup: 0, level: 'all' };
  const pos = [], feeds = {};
  const ort = loadOrt();
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--threads') opts.threads = Number(args[++i]);
    else if (a === '--iters') opts.iters = Number(args[++i]);
    else if (a === '--warmup') opts.warmup = Number(args[++i]);
    else if (a === '--optimization') opts.level = args[++i];  // disabled, basic, extended or all
    else if (a.includes('=')) {
      const [name, file] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
      const t = readNpy(file);
      feeds[name] = new ort.Tensor(t.type, t.data, t.shape);
    } else pos.push(a);
  }
  const [model, outDir] = pos;
  const so = { graphOptimizationLevel: opts.level, executionMode: 'sequential', interOpNumThreads: 1 };
  if (opts.threads > 0) so.intraOpNumThreads = opts.threads;
  const session = await ort.InferenceSession.create(model, so);
  for (let i = 0; i < opts.warmup; ++i) await session.run(feeds);
  const times = [];
  let result;
  for (let i = 0; i < opts.iters; ++i) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  fs.mkdirSync(outDir, { recursive: true });
  const outputs = [];
  for (const name of session.outputNames) {
    const file = path.join(outDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy');
    writeNpy(file, result[name]);
    outputs.push({ name, file, shape: result[name].dims, dtype: result[name].type });
  }
  const sorted = [...times].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  console.log(JSON.stringify({ latency_ms: median, times_ms: times, outputs }));
}

// Also a library for scripts/ort_server.js (the persistent peer of `kiln bench`).
module.exports = { readNpy, writeNpy };
if (require.main === module) main().catch(e => { console.error(`ort_run: ${e.message}`); process.exit(1); });
