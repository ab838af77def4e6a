import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { parseOriginConfig, type OriginConfig } from "../../src/origin/config/parse-origin-config.ts";
import { startOrigin, type RunningOrigin, type StartOptions } from "../../src/origin/start-origin.ts";
import { etagFor } from "../../src/origin/store/etag.ts";
import type { ItemStore } from "../../src/origin/store/item-store.ts";

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A fresh directory removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "slim-origin-test-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function testConfig(env: Record<string, string> = {}, dir = tempDir()): OriginConfig {
  return parseOriginConfig({ PORT: "0", METRICS_PORT: "0", DATABASE_URL: join(dir, "items.sqlite"), ...env });
}

/** The real service on loopback with a real SQLite file; closed after the test. */
export async function start(
  env: Record<string, string> = {},
  options: Omit<StartOptions, "config"> & { dir?: string } = {},
): Promise<RunningOrigin> {
  const { dir, ...rest } = options;
  const origin = await startOrigin({ config: testConfig(env, dir), log: () => {}, ...rest });
  cleanups.push(() => origin.close());
  return origin;
}

/** `inner` with some methods replaced (tests gate or count store calls). */
export function storeWith(inner: ItemStore, overrides: Partial<ItemStore>): ItemStore {
  return {
    description: inner.description,
    writable: inner.writable,
    get: (id) => inner.get(id),
    put: (id, body, condition) => inner.put(id, body, condition),
    delete: (id, condition) => inner.delete(id, condition),
    count: () => inner.count(),
    seedIfEmpty: (items) => inner.seedIfEmpty(items),
    ids: () => inner.ids(),
    ping: () => inner.ping(),
    close: () => inner.close(),
    ...overrides,
  };
}

export function registerCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

export interface RawResponse {
  /** Exactly the bytes of this response on the wire (head + body). */
  raw: Buffer;
  text: string;
  status: number;
  headers: [string, string][];
  body: Buffer;
  header(name: string): string | undefined;
}

/**
 * A raw HTTP/1.1 client connection: writes the bytes it is given and cuts the reply stream into
 * responses by the framing rules, so tests see the exact bytes the origin wrote.
 */
export class RawConnection {
  readonly socket: Socket;
  #buffer = Buffer.alloc(0);
  #waiters: { head: boolean; resolve: (r: RawResponse) => void; reject: (e: Error) => void }[] = [];
  #ended = false;
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
    socket.on("data", (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#drain();
    });
    socket.on("end", () => {
      this.#ended = true;
      this.#drain();
    });
    socket.on("error", (error) => {
      for (const w of this.#waiters.splice(0)) w.reject(error);
    });
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.off("error", reject);
        const c = new RawConnection(socket);
        cleanups.push(() => void socket.destroy());
        resolve(c);
      });
      socket.once("error", reject);
    });
  }

  /** Sends `request` and resolves with the next complete response. `head`: the request was HEAD. */
  send(request: string | Buffer, head = false): Promise<RawResponse> {
    const p = this.next(head);
    this.socket.write(request);
    return p;
  }

  next(head = false): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      this.#waiters.push({ head, resolve, reject });
      this.#drain();
    });
  }

  /** Bytes received that no response has claimed (should stay empty). */
  get leftover(): Buffer {
    return this.#buffer;
  }

  #drain(): void {
    while (this.#waiters.length > 0) {
      const w = this.#waiters[0]!;
      const end = this.#buffer.indexOf("\r\n\r\n");
      if (end === -1) break;
      const headText = this.#buffer.subarray(0, end).toString("latin1");
      const [statusLine = "", ...lines] = headText.split("\r\n");
      const status = Number(statusLine.split(" ")[1]);
      const headers = lines.map((l): [string, string] => {
        const i = l.indexOf(":");
        return [l.slice(0, i), l.slice(i + 1).trim()];
      });
      const cl = headers.find(([k]) => k.toLowerCase() === "content-length")?.[1];
      let bodyLength: number;
      if (w.head || status === 204 || status === 304 || (status >= 100 && status < 200)) bodyLength = 0;
      else if (cl !== undefined) bodyLength = Number(cl);
      else if (this.#ended) bodyLength = this.#buffer.length - end - 4;
      else break; // read-until-close framing: wait for the end
      const total = end + 4 + bodyLength;
      if (this.#buffer.length < total) break;
      const raw = Buffer.from(this.#buffer.subarray(0, total));
      this.#buffer = this.#buffer.subarray(total);
      this.#waiters.shift();
      w.resolve({
        raw,
        text: raw.toString("latin1"),
        status,
        headers,
        body: raw.subarray(end + 4),
        header: (name) => headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1],
      });
    }
    if (this.#ended && this.#waiters.length > 0 && this.#buffer.indexOf("\r\n\r\n") === -1) {
      for (const w of this.#waiters.splice(0)) w.reject(new Error("connection ended before a response"));
    }
  }
}

export function get(path: string, headers: Record<string, string> = {}, method = "GET"): string {
  return `${method} ${path} HTTP/1.1\r\nHost: origin\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
}

export function withBody(
  method: string,
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = { "Content-Type": "application/json" },
): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const head = `${method} ${path} HTTP/1.1\r\nHost: origin\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}Content-Length: ${bytes.byteLength}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), bytes]);
}

/** Everything the server writes on a fresh connection for `bytes` followed by the client's FIN (a half-close). */
export function sendThenFin(port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    const chunks: Buffer[] = [];
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.on("connect", () => socket.end(bytes));
  });
}

/**
 * Waits for `condition`, checking every millisecond or so (the origins under test share this process);
 * `what` (or what it returns, read when the wait gives up) names it in the error.
 */
export async function until(condition: () => boolean | Promise<boolean>, what: string | (() => string), withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** One request on a fresh connection. */
export async function once(port: number, request: string | Buffer, head = false): Promise<RawResponse> {
  const c = await RawConnection.open(port);
  const r = await c.send(request, head);
  c.socket.destroy();
  return r;
}

/** A promise plus its resolver, for gates in tests. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * The epoch of an ETag the origin sent (`"Xa1"` → `Xa`). Epochs are random per store session, so tests
 * read one from a first response and build the other ETags of that session with `etagFor(epoch, version)`.
 */
export function epochOf(etag: string | undefined): string {
  const m = /^"([0-9A-Za-z_-]{2})[0-9A-Za-z_-]+"$/.exec(etag ?? "");
  if (m === null) throw new Error(`not an origin ETag: ${etag}`);
  return m[1]!;
}

export { etagFor };

/** A 304 as the origin writes it. */
export function notModified(etag: string, reason = "Not Modified"): string {
  return `HTTP/1.1 304 ${reason}\r\nETag: ${etag}\r\n\r\n`;
}
