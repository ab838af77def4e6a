// Runs in Node (vitest project `node`): the `[name] ` prefixes `npm start` puts on its children's output.
// One prefix per line, wherever the chunks split, never doubled (`[worker] [worker] …`, `[origin] [worker] …`
// came from prefixing chunks, not lines), and a last line without a newline still printed at the end.
import { PassThrough } from "node:stream";
import { finished } from "node:stream/promises";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { echoLines, linePrefixer } from "../../scripts/lib/local-stack.ts";

function feed(name: string, chunks: readonly string[]): string {
  const lines = linePrefixer(name);
  return chunks.map((chunk) => lines.push(chunk)).join("") + lines.flush();
}

describe("linePrefixer", () => {
  it("prefixes whole lines: a line split across chunks gets one prefix, at its start", () => {
    const lines = linePrefixer("worker");
    expect(lines.push("Ready on http://127.0.0.1:")).toBe("");
    expect(lines.push("8787\n[wrangler:info] GET /items/1 2")).toBe("[worker] Ready on http://127.0.0.1:8787\n");
    expect(lines.push("00 OK (3ms)\n")).toBe("[worker] [wrangler:info] GET /items/1 200 OK (3ms)\n");
    expect(lines.flush()).toBe("");
  });

  it("leaves nothing dangling after a chunk that ends a line (the doubled prefix)", () => {
    const lines = linePrefixer("origin");
    expect(lines.push("listening on 127.0.0.1:8788\n")).toBe("[origin] listening on 127.0.0.1:8788\n");
    expect(lines.push("second\n")).toBe("[origin] second\n");
    expect(feed("worker", ["a\n", "b\n", "c\n"])).toBe("[worker] a\n[worker] b\n[worker] c\n");
  });

  it("keeps several lines of one chunk, blank lines and CRLF apart", () => {
    expect(feed("w", ["one\n\ntwo\r\nthree\n"])).toBe("[w] one\n[w] \n[w] two\r\n[w] three\n");
  });

  it("prints a last line without a newline when the stream ends", () => {
    const lines = linePrefixer("origin");
    expect(lines.push("shutting down")).toBe("");
    expect(lines.flush()).toBe("[origin] shutting down\n");
    expect(lines.flush()).toBe("");
    expect(feed("origin", [])).toBe("");
    expect(feed("origin", ["", ""])).toBe("");
  });

  it("gives the same output however the text is cut into chunks", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "b", " ", "\n", "\r", "é", "["), maxLength: 60 });
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 8 }), (whole, cuts) => {
        const at = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b);
        const chunks = [0, ...at].map((start, i) => whole.slice(start, at[i] ?? whole.length));
        const out = feed("x", chunks);
        expect(out).toBe(feed("x", [whole]));
        if (whole !== "") {
          const lines = out.slice(0, -1).split("\n");
          expect(lines.every((line) => line.startsWith("[x] "))).toBe(true);
          expect(lines.map((line) => line.slice(4)).join("\n")).toBe(whole.endsWith("\n") ? whole.slice(0, -1) : whole);
        }
      }),
      { numRuns: 2000, seed: 10 },
    );
  });
});

describe("echoLines", () => {
  it("interleaves a child's stdout and stderr only at line boundaries, one prefix per line", async () => {
    const stdout = new PassThrough({ encoding: "utf8" });
    const stderr = new PassThrough({ encoding: "utf8" });
    let written = "";
    const sink = (text: string) => {
      written += text;
    };
    echoLines("worker", stdout, sink);
    echoLines("worker", stderr, sink);
    stdout.write("⎔ Starting local serv");
    stderr.write("[wrangler:warn] a war");
    stdout.write("er...\n[wrangler:info] Ready on http://127.0.0.1:8787\n");
    stderr.write("ning\nno newline at the end");
    stdout.end();
    stderr.end();
    await Promise.all([finished(stdout), finished(stderr)]);
    expect(written.split("\n")).toEqual([
      "[worker] ⎔ Starting local server...",
      "[worker] [wrangler:info] Ready on http://127.0.0.1:8787",
      "[worker] [wrangler:warn] a warning",
      "[worker] no newline at the end",
      "",
    ]);
  });
});
