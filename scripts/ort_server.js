#!/usr/bin/env node
// The ONNX Runtime peer of `kiln bench`: one process for the whole bench, so that each timed run is a
// plain session.run() and not a process start. Reads one JSON command a line on stdin, answers one JSON
// line on stdout ({"ok": true, ...} or {"ok": false, "error": "..."}):
//   {"cmd":"load","model":PATH,"threads":N,"inputs":{NAME:FILE.npy}}  -> {"ok":true,"outputs":[NAME...]}
//   {"cmd":"run"}             -> {"ok":true,"ms":T}   (hrtime around session.run, measured here)
//   {"cmd":"save","dir":DIR}  -> {"ok":true,"outputs":{NAME:FILE.npy}}  (the last run's outputs)
//   {"cmd":"unload"} / {"cmd":"quit"}
// On start it prints {"ok":true,"ready":true,"version":V}, or exits 3 when onnxruntime-node is missing.
// usage: ort_server.js [--ort-dir DIR]   (default: $KILN_ORT_DIR, then build/ort beside scripts/)
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

const { readNpy, writeNpy } = require('./ort_run.js');

// The given folder only (kiln found it and checked it); without one, where ort_run.js looks.
function ortDirs() {
  const argv = process.argv.slice(2);
  const flag = argv.indexOf('--ort-dir');
  if (flag >= 0) return [argv[flag + 1]];
  return [process.env.KILN_ORT_DIR, path.join(__dirname, '..', 'build', 'ort')].filter(Boolean);
}

function loadOrt() {
  for (const d of ortDirs()) {
    try {
      const ort = require(path.join(d, 'node_modules', 'onnxruntime-node'));
      const version = require(path.join(d, 'node_modules', 'onnxruntime-node', 'package.json')).version;
      return { ort, version };
    } catch (e) { /* next */ }
  }
  console.error(`ort_server: onnxruntime-node is not installed in ${ortDirs().join(', ')}; ` +
                'run scripts/install_ort.sh build/ort');
  process.exit(3);
}

const reply = obj => process.stdout.write(JSON.stringify(obj) + '\n');

async function main() {
  const { ort, version } = loadOrt();  // exits 3 with a message on stderr when missing
  let session = null, feeds = null, last = null;
  const handlers = {
    async load(c) {
      session = null; last = null;
      const so = { graphOptimizationLevel: 'all', executionMode: 'sequential', interOpNumThreads: 1 };
      if (c.threads > 0) so.intraOpNumThreads = c.threads;
      feeds = {};
      for (const [name, file] of Object.entries(c.inputs || {})) {
        const t = readNpy(file);
        feeds[name] = new ort.Tensor(t.type, t.data, t.shape);
      }
      session = await ort.InferenceSession.create(c.model, so);
      return { outputs: session.outputNames };
    },
    async run() {
      if (!session) throw new Error('no model loaded');
      const t0 = process.hrtime.bigint();
      last = await session.run(feeds);
      return { ms: Number(process.hrtime.bigint() - t0) / 1e6 };
    },
    async save(c) {
      if (!last) throw new Error('nothing run yet');
      fs.mkdirSync(c.dir, { recursive: true });
      const outputs = {};
      for (const name of session.outputNames) {
        const file = path.join(c.dir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy');
        writeNpy(file, last[name]);
        outputs[name] = file;
      }
      return { outputs };
    },
    async unload() {
      if (session && session.release) await session.release();
      session = null; feeds = null; last = null;
      return {};
    },
  };
  reply({ ok: true, ready: true, version });
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {  // one command at a time, in order
    if (!line.trim()) continue;
    let c;
    try { c = JSON.parse(line); } catch (e) { reply({ ok: false, error: `not JSON: ${line}` }); continue; }
    if (c.cmd === 'quit') break;
    const h = handlers[c.cmd];
    if (!h) { reply({ ok: false, error: `unknown command ${c.cmd}` }); continue; }
    try { reply({ ok: true, ...(await h(c)) }); } catch (e) { reply({ ok: false, error: e.message }); }
  }
  process.exit(0);
}

main().catch(e => { console.error(`ort_server: ${e.message}`); process.exit(1); });
