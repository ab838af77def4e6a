import { existsSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { prng, Zipf } from "../lib/random.ts";

/** A request stream with its keys interned: `requests[i]` indexes `keys`. */
export interface Trace {
  name: string;
  requests: Int32Array;
  /** Distinct keys as the strings a cache would see. */
  keys: string[];
}

/** Read a LIRS trace (gzip or plain text; one integer key per line; `*` lines are breakpoints, not keys). */
export function readLirsTrace(path: string, name: string): Trace {
  if (!existsSync(path)) {
    throw new Error(
      `trace file not found: ${path}\n  Point --traces-dir (or SLIM_EDGE_TRACES) at the directory holding the traces (default: ../shared/traces ` +
        `beside the repository; see its README.md), pass --trace with a path to a .lirs.gz file, or --trace zipf (generated, needs no file).`,
    );
  }
  const bytes = readFileSync(path);
  const gzipped = bytes[0] === 0x1f && bytes[1] === 0x8b;
  let text: string;
  try {
    text = (gzipped ? gunzipSync(bytes) : bytes).toString("latin1");
  } catch (error) {
    throw new Error(`${path}: not a readable gzip file (${error instanceof Error ? error.message : String(error)})`);
  }
  const ids = new Map<string, number>();
  const keys: string[] = [];
  const requests: number[] = [];
  let lineNumber = 0;
  for (const raw of text.split("\n")) {
    lineNumber++;
    const line = raw.trim();
    if (line === "" || line === "*") continue;
    if (!/^-?\d+$/.test(line)) {
      throw new Error(`${path}:${lineNumber}: expected an integer key or '*', got ${JSON.stringify(line.slice(0, 40))}`);
    }
    const key = String(Number(line));
    let id = ids.get(key);
    if (id === undefined) {
      id = keys.length;
      ids.set(key, id);
      keys.push(key);
    }
    requests.push(id);
  }
  return { name, requests: Int32Array.from(requests), keys };
}

export interface ZipfOptions {
  exponent: number;
  keyCount: number;
  requestCount: number;
  seed: number;
}

/** The README's synthetic trace: Zipf(s = 0.93) over 100,000 keys, 2,000,000 requests, fixed seed. */
export const ZIPF_DEFAULTS: ZipfOptions = { exponent: 0.93, keyCount: 100_000, requestCount: 2_000_000, seed: 42 };

/**
 * A deterministic Zipf trace: key of rank r (1-based) is requested with probability ∝ r^-s. Ranks
 * are drawn by inverting the exact CDF (binary search) with a seeded PRNG, so every run and every
 * machine sees the same stream.
 */
export function zipfTrace(options: ZipfOptions = ZIPF_DEFAULTS): Trace {
  const { exponent, keyCount, requestCount, seed } = options;
  const zipf = new Zipf(keyCount, exponent);
  const random = prng(seed);
  const requests = new Int32Array(requestCount);
  for (let i = 0; i < requestCount; i++) requests[i] = zipf.sample(random());
  const keys = Array.from({ length: keyCount }, (_, rank) => String(rank));
  return { name: "zipf", requests, keys };
}

