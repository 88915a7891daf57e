// ONNX Runtime side of scripts/bench.sh: the same measurements as `onyx bench`, through onnxruntime-node.
//
// usage: node scripts/bench_ort.mjs MODEL [--input NAME=FILE ...] [--threads N] [--warmup W] [--runs R] [--json]
//                                         [--output-dir DIR]
//
// --input NAME=FILE feeds the graph input NAME from a .npy file (as `onyx bench --input`); inputs not given are
// generated as `onyx bench` / `onyx run --dummy` do: floats arange(n)/n, integers i % 10, booleans i % 2,
// symbolic dims 1. Reports session-create time, first-run time, median / p90 / min over R runs after W warm-ups,
// the median CPU time of a run (user + system, all threads), and the process's peak RSS in MB: VmHWM of
// /proc/self/status, the high-water mark of this process's own memory (getrusage's maxRSS would also count the
// RSS of the process that forked it, which Linux carries over fork and exec); it includes node itself:
// base_rss_mb is the peak before the session was created. --output-dir writes the first run's outputs as
// output_K.npy (graph order). Errors are reported on one line of stderr, with exit status 1.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';

import * as ort from 'onnxruntime-node';

function fail(message) {
  process.stderr.write(`bench_ort: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const opts = { threads: 1, warmup: 2, runs: 10, json: false, outputDir: null, model: null, inputs: new Map() };
  const int = (name, value, lo) => {
    if (!/^\d+$/.test(value ?? '') || Number(value) < lo) fail(`${name} expects an integer >= ${lo}, got '${value}'`);
    return Number(value);
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--threads') opts.threads = int(a, argv[++i], 1);
    else if (a === '--warmup') opts.warmup = int(a, argv[++i], 0);
    else if (a === '--runs') opts.runs = int(a, argv[++i], 1);
    else if (a === '--json') opts.json = true;
    else if (a === '--output-dir') opts.outputDir = argv[++i] ?? fail('--output-dir needs a value');
    else if (a === '--input') {
      const spec = argv[++i] ?? fail('--input needs a value');
      const eq = spec.indexOf('=');
      if (eq <= 0) fail(`--input expects NAME=FILE, got '${spec}'`);
      opts.inputs.set(spec.slice(0, eq), spec.slice(eq + 1));
    }
    else if (a.startsWith('--')) fail(`unknown option '${a}'`);
    else if (opts.model === null) opts.model = a;
    else fail(`unexpected argument '${a}'`);
  }
  if (opts.model === null) {
    fail('usage: node bench_ort.mjs MODEL [--input NAME=FILE ...] [--threads N] [--warmup W] [--runs R] [--json] '
      + '[--output-dir DIR]');
  }
  return opts;
}

const typedArrays = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
};

function makeInput(meta) {
  if (!meta.isTensor) fail(`input '${meta.name}' is not a tensor; only tensor inputs are generated`);
  const dims = meta.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
  const n = dims.reduce((a, b) => a * b, 1);
  if (meta.type === 'float32' || meta.type === 'float64') {
    const data = new typedArrays[meta.type](n);
    for (let i = 0; i < n; ++i) data[i] = i / n;
    return new ort.Tensor(meta.type, data, dims);
  }
  if (meta.type === 'bool') {
    const data = new Uint8Array(n);
    for (let i = 0; i < n; ++i) data[i] = i % 2;
    return new ort.Tensor('bool', data, dims);
  }
  const Array_ = typedArrays[meta.type];
  if (!Array_) fail(`input '${meta.name}': cannot generate ${meta.type} values`);
  const data = new Array_(n);
  const big = meta.type.endsWith('64');
  for (let i = 0; i < n; ++i) data[i] = big ? BigInt(i % 10) : i % 10;
  return new ort.Tensor(meta.type, data, dims);
}

const npyTypes = {
  float32: '<f4', float64: '<f8', int8: '|i1', uint8: '|u1', int16: '<i2', uint16: '<u2', int32: '<i4',
  uint32: '<u4', int64: '<i8', uint64: '<u8', bool: '|b1', float16: '<f2',
};

// Reads a little-endian, C-order .npy file (format versions 1 to 3) as an ort.Tensor.
function readNpy(file, name) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    fail(`input '${name}': ${e.message}`);
  }
  const bad = (why) => fail(`input '${name}': ${file} is not a readable .npy file: ${why}`);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') bad('no .npy magic');
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']*)'/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || shapeText === undefined) bad(`header ${header.trim()}`);
  if (/'fortran_order':\s*True/.test(header)) bad('Fortran order is not supported');
  const dims = shapeText.split(',').map((d) => d.trim()).filter((d) => d !== '').map(Number);
  const type = Object.keys(npyTypes).find((t) => npyTypes[t] === descr || npyTypes[t].replace('<', '|') === descr);
  if (!type || type === 'float16') bad(`element type '${descr}' is not supported`);
  const n = dims.reduce((a, b) => a * b, 1);
  const Array_ = type === 'bool' ? Uint8Array : typedArrays[type];
  const dataStart = start + headerLen;
  if (buf.length - dataStart < n * Array_.BYTES_PER_ELEMENT) bad('data is shorter than the shape needs');
  const data = new Array_(n);  // a copy: the file's data need not be aligned for Array_
  new Uint8Array(data.buffer).set(buf.subarray(dataStart, dataStart + n * Array_.BYTES_PER_ELEMENT));
  return new ort.Tensor(type, data, dims);
}

// numpy's .npy format, version 1.0: magic, header length, a Python dict literal padded to 64 bytes, the data.
function writeNpy(file, tensor) {
  const descr = npyTypes[tensor.type];
  if (!descr) fail(`output type ${tensor.type} cannot be saved`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function stats(times) {
  const t = [...times].sort((a, b) => a - b);
  const n = t.length;
  const median = n % 2 ? t[(n - 1) / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  const p90 = t[Math.ceil((n * 9) / 10) - 1];  // nearest rank, as onyx bench
  return { median, p90, min: t[0] };
}

const opts = parseArgs(process.argv.slice(2));
// VmHWM of this process (kB); maxRSS (KiB) only where /proc is missing.
function rssMb() {
  try {
    const m = /^VmHWM:\s*(\d+)\s*kB/m.exec(fs.readFileSync('/proc/self/status', 'latin1'));
    if (m) return Number(m[1]) / 1024;
  } catch { /* no /proc */ }
  return process.resourceUsage().maxRSS / 1024;
}
const firstLine = (e) => String(e?.message ?? e).split('\n').find((l) => l.trim() !== '') ?? String(e);
const baseRss = rssMb();

let t0 = performance.now();
let session;
try {
  session = await ort.InferenceSession.create(opts.model, {
    intraOpNumThreads: opts.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,  // errors only: no warnings about unused initializers
  });
} catch (e) {
  fail(`${opts.model}: ${firstLine(e)}`);
}
const createMs = performance.now() - t0;

if (!Array.isArray(session.inputMetadata)) fail('this onnxruntime-node has no inputMetadata: use a newer one (ORT_VERSION)');
const feeds = {};
for (const meta of session.inputMetadata) {
  feeds[meta.name] = opts.inputs.has(meta.name) ? readNpy(opts.inputs.get(meta.name), meta.name) : makeInput(meta);
}
for (const name of opts.inputs.keys()) {
  if (!(name in feeds)) fail(`'${name}' is not an input of the model`);
}

async function run() {
  try {
    return await session.run(feeds);
  } catch (e) {
    fail(`run: ${firstLine(e)}`);
  }
}

t0 = performance.now();
const first = await run();
const firstRunMs = performance.now() - t0;
if (opts.outputDir) {
  fs.mkdirSync(opts.outputDir, { recursive: true });
  session.outputNames.forEach((name, k) => writeNpy(path.join(opts.outputDir, `output_${k}.npy`), first[name]));
}
for (let i = 0; i < opts.warmup; ++i) await run();
const times = [];
const cpuTimes = [];
for (let i = 0; i < opts.runs; ++i) {
  const cpu0 = process.cpuUsage();
  t0 = performance.now();
  await run();
  times.push(performance.now() - t0);
  const cpu = process.cpuUsage(cpu0);  // microseconds since cpu0, all threads
  cpuTimes.push((cpu.user + cpu.system) / 1000);
}
const s = stats(times);
const result = {
  model: opts.model, create_ms: createMs, first_run_ms: firstRunMs, median_ms: s.median, p90_ms: s.p90,
  min_ms: s.min, cpu_median_ms: stats(cpuTimes).median, runs: opts.runs, warmup: opts.warmup, threads: opts.threads, peak_rss_mb: rssMb(),
  base_rss_mb: baseRss, ort_version: ort.env.versions.node ?? ort.env.versions.common,
};
if (opts.json) {
  console.log(JSON.stringify(result));
} else {
  for (const [k, v] of Object.entries(result)) console.log(`${k.padEnd(14)} ${typeof v === 'number' ? v.toFixed(2) : v}`);
}
await session.release();
