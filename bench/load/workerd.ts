// The edge worker under a bare `workerd serve`, with an in-memory Cache API backend (cache-service.ts) so that
// `caches.default` works as it does under `wrangler dev` (a bare workerd without one throws "No Cache was
// configured"). Bundling reuses bench/workerd/harness.ts (esbuild, as wrangler bundles).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { bundleWorker, REPO_ROOT, wranglerCompatibilityDate } from "../workerd/harness.ts";

const WORKERD = join(REPO_ROOT, "node_modules/.bin/workerd");

export interface EdgeWorkerd {
  url: string;
  port: number;
  pid: number;
  bundleBytes: number;
  /** The last lines workerd printed (its stderr carries the worker's console output). */
  logs(): string;
  close(): Promise<void>;
}

/** A capnp text literal (capnp understands \xNN escapes, not JSON's \uNNNN). */
function text(s: string): string {
  let out = '"';
  for (const byte of Buffer.from(s, "utf8")) {
    if (byte === 0x22) out += '\\"';
    else if (byte === 0x5c) out += "\\\\";
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\x${byte.toString(16).padStart(2, "0")}`;
  }
  return `${out}"`;
}

function config(bindings: Record<string, string>, compatibilityDate: string): string {
  const vars = Object.entries(bindings).map(([name, value]) => `(name = ${text(name)}, text = ${text(value)})`);
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "edge", worker = .edge),
    (name = "cache", worker = .cache),
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "edge") ],
);

const edge :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = ${text(compatibilityDate)},
  bindings = [${vars.join(", ")}],
  globalOutbound = "internet",
  cacheApiOutbound = "cache",
);

const cache :Workerd.Worker = (
  modules = [ (name = "cache.js", esModule = embed "cache.js") ],
  compatibilityDate = ${text(compatibilityDate)},
);
`;
}

export async function startEdgeWorkerd(options: { bindings: Record<string, string>; verbose?: boolean }): Promise<EdgeWorkerd> {
  const [worker, cache] = await Promise.all([
    bundleWorker(resolve(REPO_ROOT, "src/edge/worker.ts"), { minify: true }),
    bundleWorker(resolve(REPO_ROOT, "bench/load/cache-service.ts")),
  ]);
  const dir = mkdtempSync(join(tmpdir(), "slim-edge-load-"));
  writeFileSync(join(dir, "worker.js"), worker.code);
  writeFileSync(join(dir, "cache.js"), cache.code);
  writeFileSync(join(dir, "config.capnp"), config(options.bindings, wranglerCompatibilityDate()));

  const child = spawn(WORKERD, ["serve", join(dir, "config.capnp"), "--control-fd=3"], { stdio: ["ignore", "pipe", "pipe", "pipe"] });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      lines.push(chunk);
      if (lines.length > 200) lines.splice(0, lines.length - 200);
      if (options.verbose) process.stderr.write(chunk);
    });
  }
  const control = child.stdio[3] as Readable;
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => fail(new Error("workerd did not listen within 20 s")), 20_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${error.message}\n${lines.join("")}`));
    };
    child.once("exit", (code, signal) => fail(new Error(`workerd exited (${code ?? signal}) before listening`)));
    let buffered = "";
    control.setEncoding("utf8");
    control.on("data", (chunk: string) => {
      buffered += chunk;
      const complete = buffered.split("\n");
      buffered = complete.pop() ?? "";
      for (const line of complete) {
        try {
          const message = JSON.parse(line) as { event?: string; socket?: string; port?: number };
          if (message.event === "listen" && message.socket === "http" && typeof message.port === "number") {
            clearTimeout(timer);
            child.removeAllListeners("exit");
            resolvePort(message.port);
          }
        } catch {
          // not a control message
        }
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    bundleBytes: worker.bytes,
    logs: () => lines.join(""),
    close: () =>
      new Promise<void>((done) => {
        const finish = () => {
          rmSync(dir, { recursive: true, force: true });
          done();
        };
        if (child.exitCode !== null || child.signalCode !== null) return finish();
        child.once("exit", finish);
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3_000).unref();
      }),
  };
}
