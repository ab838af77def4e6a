// What a test and the fake origin (test/support/node/fake-origin.ts) exchange; no runtime code, so both
// workerd and Node tests can import it.
export interface Scenario {
  status?: number;
  /** Raw header pairs, sent as given (duplicates and case preserved). */
  headers?: [string, string][];
  body?: string;
  /** respond (default); hang: never answer; reset: destroy the socket mid-body; short-body: Content-Length longer than the body. */
  behaviour?: "respond" | "hang" | "reset" | "short-body";
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** Raw header pairs as they arrived on the wire. */
  headers: [string, string][];
}

