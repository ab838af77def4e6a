// The change feed's bookkeeping (src/origin/feed/change-log-cursor.ts): every change applied once, whether
// NOTIFY, a poll or both bring it, a reset whenever the log cannot prove nothing was missed, and nothing held
// or re-read for a transaction that stays open.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChangeLogCursor, finishedIn, parseNotification, parseSnapshot, type ChangePoll, type ChangeRow, type CursorStep, type Snapshot } from "../../src/origin/feed/change-log-cursor.ts";

const FEED = "feed-1";
/** A snapshot: `xmin:xmax:xip`. */
const snap = (xmin: number, xmax = xmin, xip: number[] = []): Snapshot => ({ xmin: BigInt(xmin), xmax: BigInt(xmax), xip: xip.map(BigInt) });
const poll = (snapshot: Snapshot, rows: ChangeRow[], extra: Partial<ChangePoll> = {}): ChangePoll => ({
  snapshot,
  feedId: FEED,
  prunedBelow: 0n,
  rows,
  ...extra,
});
const row = (seq: number, xid: number, id: string): ChangeRow => ({ seq: String(seq), xid: BigInt(xid), id });
/** The ids a step applies (a reset as it is). */
const ids = (step: CursorStep) => (step.reset ? step : step.changes.map((change) => change.id));

describe("change log cursor", () => {
  it("applies each change once, whether a notification, a poll or both bring it", () => {
    const c = new ChangeLogCursor();
    expect(ids(c.absorb(poll(snap(100), [])))).toEqual([]);
    expect(c.notified("1", 100n, "a")).toBe("a");
    expect(c.notified("1", 100n, "a")).toBeUndefined(); // delivered twice
    expect(c.held).toBe(1);
    // The poll sees the same row (its transaction was not finished in the last snapshot) plus one NOTIFY lost.
    expect(c.absorb(poll(snap(101), [row(1, 100, "a"), row(2, 100, "b")]))).toEqual({ reset: false, changes: [row(2, 100, "b")] });
    expect(c.held).toBe(0); // the snapshot sees xid 100 finished: no poll returns it again
    // A late notification of a row the poll already covered.
    expect(c.notified("2", 100n, "b")).toBeUndefined();
    expect(c.since).toEqual(snap(101));
  });

  it("catches a transaction that drew an earlier seq but committed after a later one", () => {
    const c = new ChangeLogCursor();
    c.absorb(poll(snap(10, 11, [10]), []));
    // xid 10 is still running: seq 7 (xid 11) committed first and is seen; xmin stays 10.
    expect(ids(c.absorb(poll(snap(10, 12, [10]), [row(7, 11, "late-seq")])))).toEqual(["late-seq"]);
    // Now xid 10 commits with seq 6: a "seq > last seen" reader would miss it; "running in the last snapshot" finds it.
    expect(ids(c.absorb(poll(snap(12), [row(6, 10, "early-seq")])))).toEqual(["early-seq"]);
  });

  it("does not apply again what an earlier poll's snapshot already saw, if a poll returns it again", () => {
    const c = new ChangeLogCursor();
    c.absorb(poll(snap(10, 12, [10]), []));
    expect(ids(c.absorb(poll(snap(10, 14, [10]), [row(1, 12, "a"), row(2, 13, "b")])))).toEqual(["a", "b"]);
    // A poll that re-reads from the old xmin (as the feed once did) changes nothing.
    expect(ids(c.absorb(poll(snap(10, 15, [10]), [row(1, 12, "a"), row(2, 13, "b"), row(3, 14, "c")])))).toEqual(["c"]);
  });

  it("holds only what was notified since the last poll, however long a transaction stays open", () => {
    const c = new ChangeLogCursor();
    c.absorb(poll(snap(10, 11, [10]), [])); // xid 10: open in another database, for the whole test
    let xid = 11;
    for (let round = 0; round < 100; round++) {
      const rows = [row(xid, xid, `id${xid}`), row(xid + 1, xid + 1, `id${xid + 1}`)];
      for (const r of rows) expect(c.notified(r.seq, r.xid, r.id)).toBe(r.id);
      expect(c.held).toBe(2);
      xid += 2;
      expect(ids(c.absorb(poll(snap(10, xid, [10]), rows)))).toEqual([]);
      expect(c.held).toBe(0);
    }
  });

  it("resets when it cannot prove nothing was missed", () => {
    const fresh = () => {
      const c = new ChangeLogCursor();
      c.absorb(poll(snap(50, 60, [50, 55]), []));
      return c;
    };
    expect(fresh().absorb(poll(snap(60), [], { feedId: "other" }))).toMatchObject({ reset: true, reason: expect.stringMatching(/recreated/) });
    expect(fresh().absorb(poll(snap(60), [], { prunedBelow: 55n }))).toMatchObject({ reset: true, reason: expect.stringMatching(/pruned/) });
    expect(fresh().absorb(poll(snap(40), []))).toMatchObject({ reset: true, reason: expect.stringMatching(/backwards/) });
    expect(fresh().absorb(poll(snap(50, 58, [50]), []))).toMatchObject({ reset: true, reason: expect.stringMatching(/backwards/) });
    expect(fresh().absorb(poll(snap(60), [row(1, 55, "")]))).toMatchObject({ reset: true, reason: expect.stringMatching(/truncated/) });
    // Pruning what it has already read is not a gap.
    expect(ids(fresh().absorb(poll(snap(60), [], { prunedBelow: 50n })))).toEqual([]);
  });

  it("reads pg_snapshot's text", () => {
    expect(parseSnapshot("10:20:")).toEqual(snap(10, 20));
    expect(parseSnapshot("10:20:10,15")).toEqual(snap(10, 20, [10, 15]));
    expect(parseSnapshot("10:20")).toBeUndefined();
    expect(parseSnapshot("10:20:x")).toBeUndefined();
    expect(finishedIn(9n, snap(10, 20, [10, 15]))).toBe(true);
    expect(finishedIn(10n, snap(10, 20, [10, 15]))).toBe(false);
    expect(finishedIn(12n, snap(10, 20, [10, 15]))).toBe(true);
    expect(finishedIn(20n, snap(10, 20, [10, 15]))).toBe(false);
  });

  it("never applies a committed change twice nor misses one, and each poll reads only what committed since the last (model)", () => {
    // A model of the log: transactions get increasing xids, write one row each, and commit in any order; one
    // transaction (another database's) stays open throughout. The reader polls: a snapshot (xmin, xmax, the
    // running xids) and the committed rows the previous snapshot did not see (or, sometimes, every committed
    // row, as a poll that re-reads would); it gets some notifications, late or twice, some lost.
    const scenario = fc.array(
      fc.record({ commitAfter: fc.nat({ max: 4 }), notify: fc.nat({ max: 3 }), pollAfter: fc.boolean(), rereads: fc.boolean(), deliver: fc.nat({ max: 3 }) }),
      { minLength: 1, maxLength: 30 },
    );
    fc.assert(
      fc.property(scenario, (txs) => {
        const c = new ChangeLogCursor();
        const committed: ChangeRow[] = [];
        const applied: string[] = [];
        const running = new Map<number, number>(); // xid → steps left before it commits
        const pending: ChangeRow[] = []; // notifications on their way
        let nextXid = 1000;
        const held = nextXid++; // open all along, never writes
        let rowsRead = 0;
        const doPoll = (rereads: boolean) => {
          const xip = [held, ...running.keys()];
          const s = snap(Math.min(...xip), nextXid, xip);
          const prev = c.since;
          const rows = committed.filter((r) => rereads || prev === undefined || !finishedIn(r.xid, prev));
          if (!rereads) rowsRead += rows.length;
          const step = c.absorb(poll(s, prev === undefined ? [] : rows));
          expect(step.reset).toBe(false);
          if (!step.reset) applied.push(...step.changes.map((change) => change.id));
        };
        const deliver = (n: number) => {
          for (const r of pending.splice(0, n)) {
            const id = c.notified(r.seq, r.xid, r.id);
            if (id !== undefined) applied.push(id);
          }
        };
        doPoll(false);
        rowsRead = 0;
        txs.forEach((tx) => {
          running.set(nextXid++, tx.commitAfter);
          for (const [xid, left] of [...running]) {
            if (left > 0) {
              running.set(xid, left - 1);
              continue;
            }
            running.delete(xid);
            const r = row(committed.length + 1, xid, `id${xid}`);
            committed.push(r);
            // 0: lost; 1: sent; 2: sent twice; 3: sent and delivered at once
            if (tx.notify >= 1) pending.push(r);
            if (tx.notify === 2) pending.push(r);
            if (tx.notify === 3) deliver(pending.length);
          }
          deliver(tx.deliver);
          if (tx.pollAfter) doPoll(tx.rereads);
        });
        for (const xid of [...running.keys()]) {
          running.delete(xid);
          committed.push(row(committed.length + 1, xid, `id${xid}`));
        }
        deliver(pending.length);
        doPoll(false);
        expect([...applied].sort()).toEqual(committed.map((r) => r.id).sort());
        // Nothing held once a poll has seen every notified transaction finished.
        expect(c.held).toBe(0);
        // Exact polls read each committed row once, however long the held transaction stays open.
        if (txs.every((tx) => !tx.pollAfter || !tx.rereads)) expect(rowsRead).toBe(committed.length);
        else expect(rowsRead).toBeLessThanOrEqual(committed.length);
      }),
      { numRuns: 500 },
    );
  });

  it("reads the trigger's payloads, ids with colons included", () => {
    expect(parseNotification("12:345:a:b")).toEqual({ seq: "12", xid: 345n, id: "a:b" });
    expect(parseNotification("12:345:")).toEqual({ seq: "12", xid: 345n, id: "" });
    expect(parseNotification("x:1:a")).toBeUndefined();
    expect(parseNotification("12")).toBeUndefined();
  });
});
