// The change feed's bookkeeping (src/origin/feed/change-log-cursor.ts): every change applied once, whether
// NOTIFY, a poll or both bring it, and a reset whenever the log cannot prove nothing was missed.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChangeLogCursor, parseNotification, type ChangePoll, type ChangeRow } from "../../src/origin/feed/change-log-cursor.ts";

const FEED = "feed-1";
const poll = (xmin: number, rows: ChangeRow[], extra: Partial<ChangePoll> = {}): ChangePoll => ({
  xmin: BigInt(xmin),
  feedId: FEED,
  prunedBelow: 0n,
  rows,
  ...extra,
});
const row = (seq: number, xid: number, id: string): ChangeRow => ({ seq: String(seq), xid: BigInt(xid), id });

describe("change log cursor", () => {
  it("applies each change once, whether a notification, a poll or both bring it", () => {
    const c = new ChangeLogCursor();
    expect(c.absorb(poll(100, []))).toEqual({ reset: false, ids: [] });
    expect(c.notified("1", 100n, "a")).toBe("a");
    expect(c.notified("1", 100n, "a")).toBeUndefined(); // delivered twice
    // The poll sees the same row (its transaction is not older than the watermark yet) plus one NOTIFY lost.
    expect(c.absorb(poll(101, [row(1, 100, "a"), row(2, 100, "b")]))).toEqual({ reset: false, ids: ["b"] });
    // A late notification of a row the poll already covered.
    expect(c.notified("2", 100n, "b")).toBeUndefined();
    expect(c.watermark).toBe(101n);
  });

  it("catches a transaction that drew an earlier seq but committed after a later one", () => {
    const c = new ChangeLogCursor();
    c.absorb(poll(10, []));
    // xid 10 is still running: seq 7 (xid 11) committed first and is seen; xmin stays 10.
    expect(c.absorb(poll(10, [row(7, 11, "late-seq")]))).toEqual({ reset: false, ids: ["late-seq"] });
    // Now xid 10 commits with seq 6: a "seq > last seen" reader would miss it; xid ≥ watermark finds it.
    expect(c.absorb(poll(12, [row(6, 10, "early-seq"), row(7, 11, "late-seq")]))).toEqual({ reset: false, ids: ["early-seq"] });
  });

  it("resets when it cannot prove nothing was missed", () => {
    const fresh = () => {
      const c = new ChangeLogCursor();
      c.absorb(poll(50, []));
      return c;
    };
    expect(fresh().absorb(poll(60, [], { feedId: "other" }))).toMatchObject({ reset: true, reason: expect.stringMatching(/recreated/) });
    expect(fresh().absorb(poll(60, [], { prunedBelow: 55n }))).toMatchObject({ reset: true, reason: expect.stringMatching(/pruned/) });
    expect(fresh().absorb(poll(40, []))).toMatchObject({ reset: true, reason: expect.stringMatching(/backwards/) });
    expect(fresh().absorb(poll(60, [row(1, 55, "")]))).toMatchObject({ reset: true, reason: expect.stringMatching(/truncated/) });
    // Pruning what it has already read is not a gap.
    expect(fresh().absorb(poll(60, [], { prunedBelow: 50n }))).toEqual({ reset: false, ids: [] });
  });

  it("never applies a committed change twice nor misses one, whatever the interleaving (model)", () => {
    // A model of the log: transactions get increasing xids, write one row each, and commit in any order;
    // the reader polls (sees committed rows with xid ≥ watermark, and xmin = oldest running xid) and gets
    // some of the notifications (in commit order, some lost).
    const scenario = fc.array(fc.record({ commitAfter: fc.nat({ max: 4 }), notify: fc.boolean(), pollAfter: fc.boolean() }), { minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(scenario, (txs) => {
        const c = new ChangeLogCursor();
        const committed: ChangeRow[] = [];
        const applied: string[] = [];
        const running = new Map<number, number>(); // xid → steps left before it commits
        let nextXid = 1000;
        const doPoll = () => {
          const xmin = running.size === 0 ? nextXid : Math.min(...running.keys());
          const step = c.absorb(poll(xmin, committed.filter((r) => r.xid >= (c.watermark ?? BigInt(xmin)))));
          expect(step.reset).toBe(false);
          if (!step.reset) applied.push(...step.ids);
        };
        doPoll();
        txs.forEach((tx, i) => {
          running.set(nextXid++, tx.commitAfter);
          for (const [xid, left] of [...running]) {
            if (left > 0) {
              running.set(xid, left - 1);
              continue;
            }
            running.delete(xid);
            const r = row(committed.length + 1, xid, `id${xid}`);
            committed.push(r);
            if (txs[i]!.notify) {
              const id = c.notified(r.seq, r.xid, r.id);
              if (id !== undefined) applied.push(id);
            }
          }
          if (tx.pollAfter) doPoll();
        });
        for (const xid of [...running.keys()]) {
          running.delete(xid);
          committed.push(row(committed.length + 1, xid, `id${xid}`));
        }
        doPoll();
        expect([...applied].sort()).toEqual(committed.map((r) => r.id).sort());
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
