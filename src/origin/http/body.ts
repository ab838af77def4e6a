import type { IncomingMessage, ServerResponse } from "node:http";
import type { OutgoingInternals } from "./wire.ts";

/**
 * Requests node:http handed over as `checkContinue` (HTTP/1.1, `Expect: 100-continue`): their client waits for
 * a 100 before it sends the body. Node would send it before the request is even looked at; the origin sends it
 * only when a write is about to read the body, so a request refused on its head alone (401, 405, 413, 415, a
 * bad id) gets that answer without the client uploading the body first (RFC 9110 §10.1.1).
 */
const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * node:http's `checkContinue` event: the request expects a 100 (start-origin.ts). One without a body (no
 * Content-Length or 0, no Transfer-Encoding: a GET, a DELETE) has nothing to wait for: node would still
 * close the connection after its answer, as after any final answer sent before the 100 (the client may yet
 * send a body), dropping the requests pipelined behind it.
 */
export function expectsContinue(req: IncomingMessage, res: ServerResponse): void {
  const { "content-length": length, "transfer-encoding": encoding } = req.headers;
  if (encoding === undefined && (length === undefined || length === "0")) (res as ServerResponse & OutgoingInternals)._expect_continue = false;
  else awaitingContinue.add(req);
}

/** About to read `req`'s body: tell a client that waits for it to send it. */
export function askForBody(req: IncomingMessage, res: ServerResponse): void {
  if (awaitingContinue.delete(req)) res.writeContinue();
}

export type BodyResult =
  | { kind: "ok"; bytes: Uint8Array }
  | { kind: "too-large" }
  | { kind: "aborted" };

/**
 * Reads a request body of at most `limit` bytes into one exactly-sized array (not a pooled Buffer
 * slice: it may end up in the cache and must not pin an 8 KiB pool slab). Stops collecting as soon as
 * the limit is passed.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const finish = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("close", onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total > limit) {
        chunks.length = 0;
        finish({ kind: "too-large" });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      const bytes = new Uint8Array(total);
      let at = 0;
      for (const chunk of chunks) {
        bytes.set(chunk, at);
        at += chunk.byteLength;
      }
      finish({ kind: "ok", bytes });
    };
    const onAbort = () => finish({ kind: "aborted" });
    const onClose = () => {
      if (!req.complete) finish({ kind: "aborted" });
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("close", onClose);
  });
}

/** `application/json` or any `+json` type, charset absent or UTF-8 (RFC 8259 §8.1). */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const [essence = "", ...params] = value.split(";");
  const type = essence.trim().toLowerCase();
  if (type !== "application/json" && !(type.startsWith("application/") && type.endsWith("+json"))) return false;
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq === -1) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    if (name !== "charset") continue;
    const charset = param.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1").toLowerCase();
    if (charset !== "utf-8" && charset !== "utf8") return false;
  }
  return true;
}
