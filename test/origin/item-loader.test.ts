// The loader's generations, driven step by step with a store whose reads the test answers: no read that
// overlapped a change puts the version from before it back into the cache.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MISSING, Wire } from "../../src/origin/http/wire.ts";
import { ItemLoader } from "../../src/origin/reads/item-loader.ts";
import { readyItems } from "../../src/origin/reads/ready-items.ts";
import type { ItemStore, StoredItem } from "../../src/origin/store/item-store.ts";
import { deferred } from "./harness.ts";

const wire = new Wire({ sendDate: false, reasonPhrase: true });
const row = (etag: string, body: string): StoredItem => ({ etag, body: Buffer.from(body) });

/** A loader over a store whose every read returns `answer` once the test resolves it. */
function loaderWithHeldReads() {
  const cache = readyItems({ maxBytes: 8 * 2 ** 20, ttlMs: 0 });
  const answer = deferred<StoredItem | undefined>();
  const store = { get: () => answer.promise } as unknown as ItemStore;
  const loader = new ItemLoader(cache, store, (item) => wire.entry(item));
  const cachedEtag = (id: string) => {
    const entry = cache.get(id);
    return entry?.found ? entry.etag : undefined;
  };
  return { loader, answer, cachedEtag };
}

describe("ItemLoader", () => {
  it("names the writes in flight, overlapping ones once, until each has ended or been abandoned", () => {
    const { loader } = loaderWithHeldReads();
    const a1 = loader.beginWrite("a");
    const a2 = loader.beginWrite("a");
    const b = loader.beginWrite("b");
    expect(loader.writesInFlight().sort()).toEqual(["a", "b"]);
    loader.endWrite(a1, undefined);
    expect(loader.writesInFlight().sort()).toEqual(["a", "b"]); // the second write to a still runs
    loader.abandonWrite(a2);
    loader.endWrite(b, wire.entry(row('"Bb1"', "{}")));
    expect(loader.writesInFlight()).toEqual([]);
  });

  it("a read that started while a write ran does not put the row from before the commit back", async () => {
    const { loader, answer, cachedEtag } = loaderWithHeldReads();
    const ticket = loader.beginWrite("x");
    const read = loader.load("x"); // a miss on another connection, reading the row before the commit
    loader.endWrite(ticket, wire.entry(row('"Aa2"', '{"v":2}'))); // committed; the 204 goes out
    expect(cachedEtag("x")).toBe('"Aa2"');
    answer.resolve(row('"Aa1"', '{"v":1}')); // the read's answer arrives late
    expect(await read).toMatchObject({ found: true, etag: '"Aa1"' }); // it still answers the request that waited on it
    expect(cachedEtag("x")).toBe('"Aa2"');
  });

  it("a read that started before the write does not fill the cache either", async () => {
    const { loader, answer, cachedEtag } = loaderWithHeldReads();
    const read = loader.load("x");
    const ticket = loader.beginWrite("x");
    loader.endWrite(ticket, wire.entry(row('"Aa2"', '{"v":2}')));
    answer.resolve(row('"Aa1"', '{"v":1}'));
    await read;
    expect(cachedEtag("x")).toBe('"Aa2"');
  });

  it("a read with nothing overlapping it fills the cache", async () => {
    const { loader, answer, cachedEtag } = loaderWithHeldReads();
    const read = loader.load("x");
    answer.resolve(row('"Aa1"', '{"v":1}'));
    await read;
    expect(cachedEtag("x")).toBe('"Aa1"');
  });
});

describe("ItemLoader and the feed's report of this instance's own writes (PostgreSQL)", () => {
  const v2 = wire.entry(row('"Aa2"', '{"v":2}'));

  it("keeps the entry when the report names the write's transaction, after the write ended", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2, 7n);
    loader.changed("x", 7n);
    expect(cachedEtag("x")).toBe('"Aa2"');
    expect(loader.ownChangesKept).toBe(1);
    loader.changed("x", 7n); // a second report of it is another change as far as the loader knows: dropped
    expect(cachedEtag("x")).toBeUndefined();
  });

  it("keeps the entry when the report came before the write ended here", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    const ticket = loader.beginWrite("x");
    loader.changed("x", 7n);
    loader.endWrite(ticket, v2, 7n);
    expect(cachedEtag("x")).toBe('"Aa2"');
    expect(loader.ownChangesKept).toBe(1);
    loader.changed("x", 8n); // and nothing is awaited any more: the next change drops it
    expect(cachedEtag("x")).toBeUndefined();
  });

  it("drops it for a report of any other transaction, before or after the write ended", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2, 7n);
    loader.changed("x", 8n);
    expect(cachedEtag("x")).toBeUndefined();
    loader.changed("x", 7n); // the own report, late: nothing to keep, nothing kept
    expect(loader.ownChangesKept).toBe(0);

    const ticket = loader.beginWrite("y");
    loader.changed("y", 8n);
    loader.endWrite(ticket, v2, 7n);
    expect(cachedEtag("y")).toBeUndefined();
  });

  it("drops it when another change came too, whatever the order of the reports", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    for (const [first, second] of [
      [7n, 8n],
      [8n, 7n],
    ] as const) {
      const ticket = loader.beginWrite("x");
      loader.changed("x", first);
      loader.changed("x", second);
      loader.endWrite(ticket, v2, 7n);
      expect(cachedEtag("x")).toBeUndefined();
    }
    const ticket = loader.beginWrite("x");
    loader.changed("x", 7n);
    loader.changed("x"); // a change whose transaction the feed does not know
    loader.endWrite(ticket, v2, 7n);
    expect(cachedEtag("x")).toBeUndefined();
  });

  it("two writes of one id in flight at once: neither result is kept, even with the first one's own report", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    const first = loader.beginWrite("x");
    loader.changed("x", 7n); // the first write's own report
    const second = loader.beginWrite("x");
    loader.endWrite(first, v2, 7n); // the second write is still running: the first's result may be old already
    expect(cachedEtag("x")).toBeUndefined();
    loader.endWrite(second, wire.entry(row('"Aa3"', '{"v":3}')), 9n);
    expect(cachedEtag("x")).toBeUndefined(); // the first write's end came between
  });

  it("a write without a transaction (SQLite), or with an unknown outcome, awaits no report", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2);
    loader.changed("x", 7n);
    expect(cachedEtag("x")).toBeUndefined();
    loader.endWrite(loader.beginWrite("y"), undefined, 7n);
    loader.changed("y", 7n);
    expect(loader.ownChangesKept).toBe(0);
  });

  it("a reset forgets every awaited report; a write cached after it awaits its own as usual", () => {
    const { loader, cachedEtag } = loaderWithHeldReads();
    loader.endWrite(loader.beginWrite("x"), v2, 7n);
    loader.invalidateAll();
    loader.endWrite(loader.beginWrite("y"), v2, 9n);
    loader.changed("x", 7n);
    expect(loader.ownChangesKept).toBe(0);
    loader.changed("y", 9n);
    expect(cachedEtag("y")).toBe('"Aa2"');
  });
});

/**
 * One id, a model database, and every interleaving of what the loader is told: this instance's writes
 * (begun, committed, ended with their result and transaction, or with an unknown outcome, or refused),
 * other writers' commits, the feed's reports of every commit in any order, reads that read the database
 * at any moment and answer later, resets that lose reports, evictions. At every step the cache holds
 * nothing older than the newest commit whose report was applied; and once every write has ended, every
 * read answered and every report not lost been applied, it holds the database's state or nothing.
 */
describe("ItemLoader against a model database", () => {
  type Step =
    | { kind: "begin"; remove: boolean }
    | { kind: "commit" | "end" | "endUnknown" | "refuse" | "report" | "snapshot" | "answer"; which: number }
    | { kind: "other"; remove: boolean }
    | { kind: "read" | "evict" }
    | { kind: "reset"; lost: number };
  const which = fc.nat({ max: 7 });
  const pick = (kind: "commit" | "end" | "endUnknown" | "refuse" | "report" | "snapshot" | "answer") => fc.record({ kind: fc.constant(kind), which });
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("begin" as const), remove: fc.boolean() }) },
    { weight: 3, arbitrary: pick("commit") },
    { weight: 3, arbitrary: pick("end") },
    { weight: 1, arbitrary: pick("endUnknown") },
    { weight: 1, arbitrary: pick("refuse") },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("other" as const), remove: fc.boolean() }) },
    { weight: 5, arbitrary: pick("report") },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("read" as const) }) },
    { weight: 1, arbitrary: pick("snapshot") },
    { weight: 2, arbitrary: pick("answer") },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("evict" as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("reset" as const), lost: fc.nat({ max: 255 }) }) },
  );
  type Row = { version: number; live: boolean };
  const entryOf = (state: Row) => (state.live ? wire.entry(row(`"v${state.version}"`, `{"v":${state.version}}`)) : MISSING);
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

  it("never keeps an entry older than the database once everything has settled", async () => {
    let kept = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 60 }), async (steps) => {
        let db: Row = { version: 0, live: false };
        let nextXid = 100n;
        const cache = readyItems({ maxBytes: 8 * 2 ** 20, ttlMs: 0 });
        type Read = { answer: (row: StoredItem | undefined) => void; seen: Row | undefined; done: Promise<unknown> };
        const pendingReads: Read[] = [];
        const store = {
          get: () => {
            const held = deferred<StoredItem | undefined>();
            pendingReads.at(-1)!.answer = held.resolve;
            return held.promise;
          },
        } as unknown as ItemStore;
        const loader = new ItemLoader(cache, store, (item) => wire.entry(item));
        type Write = { ticket: ReturnType<ItemLoader["beginWrite"]>; remove: boolean; committed?: { row: Row; xid: bigint | undefined } };
        const writes: Write[] = [];
        const reports: bigint[] = [];
        const versionOf = new Map<bigint, number>();
        /** The version of the newest commit whose report was applied: nothing older may be cached after it. */
        let reported = 0;
        const report = (xid: bigint) => {
          loader.changed("x", xid);
          reported = Math.max(reported, versionOf.get(xid)!);
        };
        const commit = (remove: boolean): bigint | undefined => {
          if (remove && !db.live) return undefined; // deleting nothing changes nothing: no report
          db = { version: db.version + 1, live: !remove };
          reports.push(nextXid);
          versionOf.set(nextXid, db.version);
          return nextXid++;
        };
        const cachedVersion = () => {
          const cached = cache.get("x");
          return cached?.found ? Number(/^"v(\d+)"$/.exec(cached.etag)![1]) : undefined;
        };
        const nth = <T>(list: T[], n: number): T | undefined => (list.length === 0 ? undefined : list[n % list.length]);
        const answer = async (read: Read) => {
          const seen = read.seen ?? db;
          pendingReads.splice(pendingReads.indexOf(read), 1);
          read.answer(seen.live ? row(`"v${seen.version}"`, `{"v":${seen.version}}`) : undefined);
          await read.done;
        };
        for (const s of steps) {
          if (s.kind === "begin") writes.push({ ticket: loader.beginWrite("x"), remove: s.remove });
          else if (s.kind === "commit") {
            const w = nth(writes.filter((x) => !x.committed), s.which);
            if (w) w.committed = { xid: commit(w.remove), row: db };
          } else if (s.kind === "end" || s.kind === "endUnknown") {
            const w = nth(writes.filter((x) => x.committed), s.which);
            if (!w) continue;
            writes.splice(writes.indexOf(w), 1);
            if (s.kind === "end") loader.endWrite(w.ticket, w.remove ? MISSING : entryOf(w.committed!.row), w.committed!.xid);
            else loader.endWrite(w.ticket, undefined);
          } else if (s.kind === "refuse") {
            const w = nth(writes.filter((x) => !x.committed), s.which);
            if (!w) continue;
            writes.splice(writes.indexOf(w), 1);
            loader.abandonWrite(w.ticket);
          } else if (s.kind === "other") commit(s.remove);
          else if (s.kind === "report") {
            const xid = nth(reports, s.which);
            if (xid !== undefined) {
              reports.splice(reports.indexOf(xid), 1);
              report(xid);
            }
          } else if (s.kind === "read") {
            if (cache.get("x") !== undefined) continue; // a hit: no read
            const read: Read = { answer: () => {}, seen: undefined, done: Promise.resolve() };
            pendingReads.push(read);
            const before = loader.storeReads;
            read.done = loader.load("x");
            if (loader.storeReads === before) pendingReads.pop(); // joined a read already in flight
          } else if (s.kind === "snapshot") {
            const read = nth(pendingReads, s.which);
            if (read && read.seen === undefined) read.seen = db;
          } else if (s.kind === "answer") {
            const read = nth(pendingReads, s.which);
            if (read) await answer(read);
          } else if (s.kind === "evict") cache.delete("x");
          else if (s.kind === "reset") {
            // The feed lost track: everything is dropped, and reports of commits before it may never come.
            loader.invalidateAll();
            for (let i = reports.length - 1; i >= 0; i--) if ((s.lost >> i % 8) & 1) reports.splice(i, 1);
          }
          expect(cachedVersion() ?? reported).toBeGreaterThanOrEqual(reported);
        }
        for (const w of writes.filter((x) => !x.committed)) w.committed = { xid: commit(w.remove), row: db };
        for (const w of writes) loader.endWrite(w.ticket, w.remove ? MISSING : entryOf(w.committed!.row), w.committed!.xid);
        while (pendingReads.length > 0) await answer(pendingReads[0]!);
        await flush();
        for (const xid of reports.splice(0)) report(xid);
        kept += loader.ownChangesKept;
        const cached = cache.get("x");
        if (cached !== undefined) expect(cached.found ? cached.etag : "absent").toBe(db.live ? `"v${db.version}"` : "absent");
      }),
      { numRuns: 2000 },
    );
    expect(kept).toBeGreaterThan(0); // the property saw entries kept by their own report, not only drops
  });
});

