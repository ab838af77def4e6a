import type { IncomingMessage } from "node:http";

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
