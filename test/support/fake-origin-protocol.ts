// What a test and the fake origin (test/support/node/fake-origin.ts) exchange; no runtime code, so both
// workerd and Node tests can import it.

/** How the fake origin answers. Every field is optional; the default is a 200 with `ETag: "v1"` and `{"id":"1"}`. */
export interface ScenarioAnswer {
  status?: number;
  /** Raw header pairs, sent as given (duplicates and case preserved). Content-Length is added unless given. */
  headers?: [string, string][];
  body?: string;
  /**
   * - respond (default): a well-formed response.
   * - hang: accept the request and never answer.
   * - reset: send the head (Content-Length: 100000) and one body byte, then close the connection
   *   (`rst: true` makes it a TCP RST instead of a FIN).
   * - short-body: Content-Length 50 bytes longer than the body, then close.
   * - hang-body: send the head (Content-Length: body + 50) and the body, then keep the connection open
   *   and send nothing more: the body never completes.
   * - trickle: a well-formed response whose body is written `trickle.chunkBytes` at a time, one chunk every
   *   `trickle.intervalMs` (a slow origin that is still making progress).
   * - raw: write `raw` (latin1, byte for byte) instead of a response the server builds, then do `rawThen`.
   *   For malformed heads, wrong Content-Length, extra bytes after a response, and so on.
   */
  behaviour?: "respond" | "hang" | "reset" | "short-body" | "hang-body" | "trickle" | "raw";
  /** reset: a TCP RST (SO_LINGER 0) instead of an orderly close. */
  rst?: boolean;
  trickle?: { chunkBytes: number; intervalMs: number };
  raw?: string;
  /**
   * raw: what happens to the connection after the bytes: keep-alive (default: the server reads the next
   * request on it as if the raw bytes were a complete response), close (FIN), rst, or hang (never read
   * or write again).
   */
  rawThen?: "keep-alive" | "close" | "rst" | "hang";
  /** Wait this long before answering (any behaviour). */
  delayMs?: number;
}

export interface Scenario extends ScenarioAnswer {
  /**
   * Per-path answers, keyed by the path under the scenario's base URL (e.g. "/items/a", query excluded).
   * A listed path is answered with the defaults, overridden by the top-level fields, overridden by its entry.
   */
  paths?: Record<string, ScenarioAnswer>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Raw header pairs as they arrived on the wire. */
  headers: [string, string][];
  /** Which TCP connection it arrived on (1, 2, ... in accept order): shows connection reuse. */
  connection?: number;
}
