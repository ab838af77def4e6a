// HTTP preconditions at the origin (RFC 9110 §13): If-Match / If-None-Match on PUT and DELETE are checked by
// the store with the write and answered 412 when they do not hold, with nothing changed (store, cache,
// change outbox, relays); If-Match on GET/HEAD is answered 412 by node:http (the fast path hands it over).
// And RFC 9112 §3.2: a repeated or invalid Host is a 400 on both paths.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFER, newFastRequest, parseFastRequest, PARSED } from "../../src/origin/http/fast/recogniser.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import type { RunningOrigin } from "../../src/origin/start-origin.ts";
import { etagFor, get, notModified, RawConnection, start, tempDir, withBody } from "./harness.ts";

const PRECONDITION_FAILED = "HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n";
const EPOCH = "Pc";
const tag = (version: number) => etagFor(EPOCH, version);

interface Running {
  origin: RunningOrigin;
  store: SqliteItemStore;
  /** Ids this origin told the others (relays, purger) it changed. */
  committed: string[];
}

async function origin(fastPath: boolean): Promise<Running> {
  const dir = tempDir();
  const store = new SqliteItemStore(join(dir, "items.sqlite"), { writeEpoch: EPOCH, recordChanges: true });
  const committed: string[] = [];
  const o = await start({ ORIGIN_FAST_PATH: String(fastPath) }, { dir, store, onCommitted: (id) => committed.push(id) });
  expect(o.fastPath).toBe(fastPath);
  return { origin: o, store, committed };
}

/** The item as this origin holds it: in the store, in its cache, and what was logged about it. */
async function snapshot({ origin, store, committed }: Running, id: string) {
  const row = await store.get(id);
  const cached = origin.cache.get(id);
  return {
    store: row === undefined ? undefined : { etag: row.etag, body: Buffer.from(row.body).toString() },
    cache: cached === undefined ? undefined : cached.found ? cached.etag : "404",
    outbox: store.pendingChanges(1_000_000).length,
    committed: committed.length,
    storeReads: origin.loader.storeReads,
  };
}

/** Sends `request`, expects a 412, and that nothing about `id` changed. */
async function refused(r: Running, c: RawConnection, id: string, request: string | Buffer, head = false): Promise<void> {
  const before = await snapshot(r, id);
  expect((await c.send(request, head)).text).toBe(PRECONDITION_FAILED);
  expect(await snapshot(r, id)).toEqual(before);
}

const put = (id: string, body: string, headers: Record<string, string> = {}) =>
  withBody("PUT", `/items/${id}`, body, { "Content-Type": "application/json", ...headers });
const del = (id: string, headers: Record<string, string> = {}) => get(`/items/${id}`, headers, "DELETE");
/** A request with header lines as given (repeats allowed) and, with a body, its Content-Length. */
function raw(method: string, path: string, headers: [string, string][], body?: string): string {
  const lines = headers.map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return `${method} ${path} HTTP/1.1\r\n${lines}${body === undefined ? "" : `Content-Length: ${Buffer.byteLength(body)}\r\n`}\r\n${body ?? ""}`;
}

describe.each([true, false])("preconditions (fast path %s)", (fastPath) => {
  it("PUT If-Match: the current ETag or `*` writes; a stale, weak, unknown or malformed one, or a missing item, is 412", async () => {
    const r = await origin(fastPath);
    const c = await RawConnection.open(r.origin.port);
    expect((await c.send(put("a", '{"v":1}'))).header("etag")).toBe(tag(1));
    expect((await c.send(get("/items/a"))).status).toBe(200); // cached
    // `*` is the whole value or malformed: `*,` and `, *` are no lists with a `*` in them.
    for (const ifMatch of ['"nope"', `W/${tag(1)}`, tag(2), `${tag(1)}x`, "", `${tag(1)} ${tag(1)}`, `*, ${tag(1)}`, "*,", ", *", `${tag(1)}, *`]) {
      await refused(r, c, "a", put("a", '{"v":"no"}', { "If-Match": ifMatch }));
    }
    // Cached as before, answered without a store read.
    const reads = r.origin.loader.storeReads;
    expect((await c.send(get("/items/a"))).body.toString()).toBe('{"v":1}');
    expect(r.origin.loader.storeReads).toBe(reads);

    expect((await c.send(put("a", '{"v":2}', { "If-Match": `"x", W/${tag(1)}, ${tag(1)}` }))).text).toBe(`HTTP/1.1 204 No Content\r\nETag: ${tag(2)}\r\n\r\n`);
    expect((await c.send(put("a", '{"v":3}', { "If-Match": "*" }))).header("etag")).toBe(tag(3));
    // Repeated fields are one list.
    const twoFields = raw("PUT", "/items/a", [["Host", "o"], ["Content-Type", "application/json"], ["If-Match", '"x"'], ["If-Match", tag(3)]], '{"v":4}');
    expect((await c.send(twoFields)).header("etag")).toBe(tag(4));
    expect((await c.send(get("/items/a"))).body.toString()).toBe('{"v":4}');

    // No item: If-Match never holds, and no row is left behind.
    await refused(r, c, "none", put("none", "1", { "If-Match": "*" }));
    await refused(r, c, "none", put("none", "1", { "If-Match": tag(1) }));
    expect((await c.send(get("/items/none"))).status).toBe(404);
    expect((await c.send(put("none", "1"))).header("etag")).toBe(tag(1));
  });

  it("PUT If-None-Match: `*` creates only, a list refuses the current ETag (weak comparison), a malformed one is 412", async () => {
    const r = await origin(fastPath);
    const c = await RawConnection.open(r.origin.port);
    expect((await c.send(put("n", '{"v":1}', { "If-None-Match": "*" }))).header("etag")).toBe(tag(1));
    await c.send(get("/items/n"));
    await refused(r, c, "n", put("n", '{"v":2}', { "If-None-Match": "*" }));
    await refused(r, c, "n", put("n", '{"v":2}', { "If-None-Match": `"x", W/${tag(1)}` }));
    await refused(r, c, "n", put("n", '{"v":2}', { "If-None-Match": `${tag(1)}, *` }));
    // Malformed (not `*`): refused on a missing item too, where `*` would create it.
    for (const inm of ["*,", ", *", "*, *"]) await refused(r, c, "created-by-star", put("created-by-star", "1", { "If-None-Match": inm }));
    expect((await c.send(put("n", '{"v":2}', { "If-None-Match": `${tag(2)}, "x"` }))).header("etag")).toBe(tag(2));
    // Both: If-Match must hold, then If-None-Match.
    await refused(r, c, "n", put("n", '{"v":3}', { "If-Match": tag(2), "If-None-Match": "*" }));
    await refused(r, c, "n", put("n", '{"v":3}', { "If-Match": tag(2), "If-None-Match": tag(2) }));
    await refused(r, c, "n", put("n", '{"v":3}', { "If-Match": tag(1), "If-None-Match": '"x"' }));
    expect((await c.send(put("n", '{"v":3}', { "If-Match": tag(2), "If-None-Match": tag(1) }))).header("etag")).toBe(tag(3));
    // If-Unmodified-Since: items have no Last-Modified, so it is ignored (RFC 9110 §13.1.4).
    expect((await c.send(put("n", '{"v":4}', { "If-Unmodified-Since": "Thu, 01 Jan 1970 00:00:00 GMT" }))).status).toBe(204);
    expect((await c.send(get("/items/n"))).body.toString()).toBe('{"v":4}');
    expect(r.committed).toEqual(["n", "n", "n", "n"]);
  });

  it("DELETE: If-Match must name the current ETag (or `*`) of a live item; If-None-Match must not", async () => {
    const r = await origin(fastPath);
    const c = await RawConnection.open(r.origin.port);
    await c.send(put("d", '{"v":1}'));
    await c.send(get("/items/d"));
    await refused(r, c, "d", del("d", { "If-Match": '"nope"' }));
    await refused(r, c, "d", del("d", { "If-None-Match": "*" }));
    await refused(r, c, "d", del("d", { "If-None-Match": `W/${tag(1)}` }));
    expect((await c.send(get("/items/d"))).status).toBe(200);
    expect((await c.send(del("d", { "If-Match": tag(1) }))).text).toBe("HTTP/1.1 204 No Content\r\n\r\n");
    expect((await c.send(get("/items/d"))).status).toBe(404);
    await refused(r, c, "d", del("d", { "If-Match": "*" }));
    await refused(r, c, "d", del("d", { "If-Match": tag(2) }));
    // No live item, no If-Match: the condition holds and there is nothing to delete.
    expect((await c.send(del("d", { "If-None-Match": "*" }))).status).toBe(204);
    expect(r.committed).toEqual(["d", "d", "d"]);
  });

  it("a read pipelined behind a refused write answers what was there", async () => {
    const r = await origin(fastPath);
    const c = await RawConnection.open(r.origin.port);
    await c.send(put("p", '{"v":1}'));
    const answers = [c.next(), c.next()];
    c.socket.write(Buffer.concat([put("p", '{"v":2}', { "If-Match": tag(9) }), Buffer.from(get("/items/p"))]));
    const [write, read] = await Promise.all(answers);
    expect(write!.text).toBe(PRECONDITION_FAILED);
    expect(read!.body.toString()).toBe('{"v":1}');
  });

  it("GET/HEAD If-Match: 412 unless it names the current strong ETag or is `*`; a 404 stays a 404", async () => {
    const r = await origin(fastPath);
    const c = await RawConnection.open(r.origin.port);
    await c.send(put("g", '{"v":1}'));
    const ok = (await c.send(get("/items/g"))).text;
    for (const ifMatch of ['"nope"', `W/${tag(1)}`, "", '"x" "y"']) {
      expect((await c.send(get("/items/g", { "If-Match": ifMatch }))).text).toBe(PRECONDITION_FAILED);
      expect((await c.send(get("/items/g", { "If-Match": ifMatch }, "HEAD"), true)).text).toBe(PRECONDITION_FAILED);
    }
    expect((await c.send(get("/items/g", { "If-Match": tag(1) }))).text).toBe(ok);
    expect((await c.send(get("/items/g", { "If-Match": `"x", ${tag(1)}` }))).text).toBe(ok);
    expect((await c.send(get("/items/g", { "If-Match": "*" }))).text).toBe(ok);
    // If-Match first, then If-None-Match (RFC 9110 §13.2.2).
    expect((await c.send(get("/items/g", { "If-Match": tag(1), "If-None-Match": tag(1) }))).text).toBe(notModified(tag(1)));
    expect((await c.send(get("/items/g", { "If-Match": '"x"', "If-None-Match": tag(1) }))).text).toBe(PRECONDITION_FAILED);
    // Without the condition the answer would be a 404, so it is ignored (§13.2.1).
    expect((await c.send(get("/items/missing", { "If-Match": "*" }))).status).toBe(404);
    // The connection is still usable.
    expect((await c.send(get("/items/g"))).text).toBe(ok);
    expect(c.leftover.length).toBe(0);
  });

  it("a repeated or invalid Host is 400 and closes the connection; valid forms are served", async () => {
    const r = await origin(fastPath);
    const { port } = r.origin;
    const setup = await RawConnection.open(port);
    await setup.send(put("h", '{"v":1}'));
    const head = (host: string[]) => raw("GET", "/items/h", host.map((h): [string, string] => ["Host", h]));
    // [] is none at all, which HTTP/1.1 requires: the same 400 in the origin's bytes (node's own had a Date).
    for (const host of [["a", "b"], ["o", "o"], ["a b/c@d"], ["a:b"], ["[zz]"], ["[::1"], ["a@b"], ["%zz"], ["o:80x"], []]) {
      const c = await RawConnection.open(port);
      const answer = await c.send(head(host));
      expect(answer.status, JSON.stringify(host)).toBe(400);
      expect(answer.header("connection")).toBe("close");
      expect(answer.body.toString()).toBe('{"error":"send exactly one Host header, with a valid value"}\n');
      expect(answer.header("date")).toBeUndefined();
      await c.closed;
    }
    for (const port_ of [port, Number(new URL(r.origin.metricsUrl!).port)]) {
      const c10 = await RawConnection.open(port_);
      expect((await c10.send("GET /healthz HTTP/1.0\r\n\r\n")).status).toBe(204); // HTTP/1.0 needs no Host
      const c11 = await RawConnection.open(port_);
      expect((await c11.send("GET /healthz HTTP/1.1\r\n\r\n")).status).toBe(400);
    }
    const c = await RawConnection.open(port);
    for (const host of [["o"], ["a.example:8788"], ["127.0.0.1:1"], ["[::1]:80"], ["[v1.x:y]"], [""], ["ex%41mple"], ["a-b_c~!$&'()*+,;="], ["o:"]]) {
      expect((await c.send(head(host))).status, JSON.stringify(host)).toBe(200);
    }
    // Writes and other routes too.
    const w = await RawConnection.open(port);
    const dup = raw("PUT", "/items/h", [["Host", "a"], ["Content-Type", "application/json"], ["Host", "b"]], '{"v":2}');
    expect((await w.send(dup)).status).toBe(400);
    expect((await (await RawConnection.open(port)).send(raw("GET", "/healthz", [["Host", "a"], ["Host", "b"]]))).status).toBe(400);
    const metricsPort = Number(new URL(r.origin.metricsUrl!).port);
    expect((await (await RawConnection.open(metricsPort)).send(raw("GET", "/healthz", [["Host", "a"], ["Host", "b"]]))).status).toBe(400);
    expect((await c.send(get("/items/h"))).body.toString()).toBe('{"v":1}');
  });

  it("a request line naming HTTP/0.9 or HTTP/2.0 is 505 and closes, on every port; nothing is written", async () => {
    const r = await origin(fastPath);
    const { port } = r.origin;
    const metricsPort = Number(new URL(r.origin.metricsUrl!).port);
    for (const version of ["HTTP/2.0", "HTTP/0.9"]) {
      for (const request of [`GET /items/v ${version}\r\nHost: o\r\n\r\n`, `GET /healthz ${version}\r\nHost: o\r\n\r\n`]) {
        for (const port_ of [port, metricsPort]) {
          const c = await RawConnection.open(port_);
          const answer = await c.send(request);
          expect([answer.status, answer.header("connection"), answer.body.toString()], `${port_} ${request}`).toEqual([
            505,
            "close",
            '{"error":"send HTTP/1.1 (or HTTP/1.0)"}\n',
          ]);
          await c.closed;
        }
      }
      const c = await RawConnection.open(port);
      expect((await c.send(raw("PUT", "/items/v", [["Host", "o"], ["Content-Type", "application/json"]], '{"v":1}').replace("HTTP/1.1", version))).status).toBe(505);
      await c.closed;
    }
    expect((await (await RawConnection.open(port)).send(get("/items/v"))).status).toBe(404);
  });
});

describe("fast path recogniser", () => {
  const parse = (headers: string) => parseFastRequest(Buffer.from(`GET /items/1 HTTP/1.1\r\n${headers}\r\n`, "latin1"), 0, newFastRequest());

  it("hands If-Match and a repeated or invalid Host to node:http, keeps valid Hosts and If-Unmodified-Since", () => {
    for (const headers of ["Host: o\r\nIf-Match: *\r\n", "if-match: \"x\"\r\nHost: o\r\n", "Host: o\r\nHost: o\r\n", "Host: a b\r\n", "Host: [::1\r\n", "Host: a:b\r\n"]) {
      expect(parse(headers), headers).toBe(DEFER);
    }
    for (const headers of ["Host: o\r\n", "Host: \r\n", "Host: [::1]:8788\r\n", "Host: 10.0.0.1:80\r\n", "Host: o\r\nIf-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n"]) {
      expect(parse(headers), headers).toBe(PARSED);
    }
  });
});
