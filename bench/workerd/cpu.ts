// CPU µs per request of a worker inside a bare `workerd serve`, measured from outside (/proc).
//
//   node bench/workerd/cpu.ts ENTRY [--path /items/1] [--method GET] [--header "origin: https://a.example"]...
//        [--var NAME=VALUE]... [--flag COMPAT_FLAG]... [--requests 20000] [--warmup 2000] [--concurrency 4]
//        [--cache http://127.0.0.1:PORT | --cache path/to/cache-worker.ts]
//
// ENTRY is bundled with esbuild (as wrangler would), served by node_modules/.bin/workerd on loopback, and
// driven over keep-alive connections; the workerd process's CPU time (utime+stime, and the per-thread
// schedstat sum at ns resolution) is read before and after. See harness.ts for the functions.
// --cache gives the worker a Cache API backend (a bare workerd has none: `caches.default` throws "No Cache was
// configured"): an HTTP service's URL (outside the process), or a cache worker's entry (inside it), e.g.
// bench/load/cache-service.ts.
import { measureWorkerCpu, type CacheBackend } from "./harness.ts";

function usage(message?: string): never {
  if (message !== undefined) console.error(message);
  console.error(
    "usage: node bench/workerd/cpu.ts ENTRY [--path P] [--method M] [--header 'name: value']... [--var NAME=VALUE]... " +
      "[--flag F]... [--requests N] [--warmup N] [--concurrency C] [--cache URL|ENTRY]",
  );
  process.exit(2);
}

const args = process.argv.slice(2);
const entry = args[0];
if (entry === undefined || entry.startsWith("--")) usage();
const headers: Record<string, string> = {};
const bindings: Record<string, string> = {};
const flags: string[] = [];
let path = "/";
let method = "GET";
let requests = 20_000;
let warmup = 2_000;
let concurrency = 4;
let cache: CacheBackend | undefined;
for (let i = 1; i < args.length; i++) {
  const a = args[i];
  const v = args[i + 1];
  if (v === undefined) usage(`missing value after ${a}`);
  i++;
  if (a === "--path") path = v;
  else if (a === "--method") method = v;
  else if (a === "--header") {
    const at = v.indexOf(":");
    if (at < 1) usage(`--header wants "name: value", got ${v}`);
    headers[v.slice(0, at).trim()] = v.slice(at + 1).trim();
  } else if (a === "--var") {
    const at = v.indexOf("=");
    if (at < 1) usage(`--var wants NAME=VALUE, got ${v}`);
    bindings[v.slice(0, at)] = v.slice(at + 1);
  } else if (a === "--flag") flags.push(v);
  else if (a === "--requests") requests = Number(v);
  else if (a === "--warmup") warmup = Number(v);
  else if (a === "--concurrency") concurrency = Number(v);
  else if (a === "--cache") cache = /^https?:\/\//.test(v) ? { url: v } : { entry: v };
  else usage(`unknown option ${a}`);
}

const r = await measureWorkerCpu({ entry, bindings, compatibilityFlags: flags, path, method, headers, requests, warmup, concurrency, cache });
console.log(
  [
    `${entry} ${method} ${path}: ${r.cpuMicrosPerRequest.toFixed(1)} CPU µs/request (workerd process)`,
    `  schedstat ${r.schedMicrosPerRequest?.toFixed(1) ?? "n/a"} µs, stat ${r.statMicrosPerRequest.toFixed(1)} µs (clock ticks)`,
    `  ${r.requests} requests in ${(r.wallMs / 1e3).toFixed(2)} s (${r.requestsPerSecond.toFixed(0)}/s), statuses ${JSON.stringify(r.statuses)}, errors ${r.errors}`,
    `  bundle ${r.bundleBytes} bytes`,
  ].join("\n"),
);
