// A full garbage collection in another Node process, without changing its code: the process is started
// with `--inspect-port=0` (nothing listens until asked), SIGUSR1 opens its inspector on a free loopback
// port (Node prints the ws:// URL on stderr), and the DevTools protocol's HeapProfiler.collectGarbage
// runs a full, compacting GC. The inspector is then closed again from inside the process, so the
// measured runs that follow see a process with no inspector session or listener.

import type { ChildProcess } from "node:child_process";

/** Node's flag for the processes this module collects. */
export const INSPECT_FLAG = "--inspect-port=0";

const WS_URL = /Debugger listening on (ws:\/\/\S+)/g;

/** What Node prints on stderr while this module works (not worth echoing). */
export const INSPECTOR_CHATTER = /^(Debugger (listening|attached|ending)|For help, see: https:\/\/nodejs\.org)/;

/**
 * Runs `passes` full GCs in `child` (launched with INSPECT_FLAG, its stderr read by `stderr()`).
 * Resolves when done; rejects within `timeoutMs` if the inspector does not answer.
 */
export async function collectGarbage(child: ChildProcess, stderr: () => string, passes = 2, timeoutMs = 30_000): Promise<void> {
  const seen = stderr().length;
  child.kill("SIGUSR1");
  const deadline = Date.now() + timeoutMs;
  let url: string | undefined;
  while (url === undefined) {
    if (Date.now() > deadline) throw new Error("inspector did not open after SIGUSR1 (was the process started with --inspect-port=0?)");
    await new Promise((r) => setTimeout(r, 50));
    const fresh = stderr().slice(seen);
    url = [...fresh.matchAll(WS_URL)].at(-1)?.[1];
  }
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`could not connect to the inspector at ${url}`));
  });
  let id = 0;
  const call = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const mine = ++id;
      const timer = setTimeout(() => reject(new Error(`inspector: ${method} timed out`)), Math.max(1, deadline - Date.now()));
      const onMessage = (event: MessageEvent) => {
        const message = JSON.parse(String(event.data)) as { id?: number; error?: { message: string }; result?: unknown };
        if (message.id !== mine) return;
        clearTimeout(timer);
        ws.removeEventListener("message", onMessage);
        if (message.error) reject(new Error(`inspector: ${method}: ${message.error.message}`));
        else resolve(message.result);
      };
      ws.addEventListener("message", onMessage);
      ws.send(JSON.stringify({ id: mine, method, params }));
    });
  try {
    for (let i = 0; i < passes; i++) await call("HeapProfiler.collectGarbage");
    // Closing from inside the process ends this session too; deferred so this call can answer first.
    await call("Runtime.evaluate", { expression: "setTimeout(() => process.getBuiltinModule('node:inspector').close(), 10), 0" });
  } finally {
    const closed = new Promise<void>((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) resolve();
      ws.addEventListener("close", () => resolve());
      setTimeout(resolve, 2_000);
    });
    await closed;
    if (ws.readyState !== WebSocket.CLOSED) ws.close();
  }
}
