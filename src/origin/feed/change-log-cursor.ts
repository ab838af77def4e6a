// Where one instance stands in the change log, and what it must do with what it reads: which ids to drop,
// or "drop everything" when it cannot prove it missed nothing. Pure: the SQL is in postgres-change-feed.ts.
//
// Why xids and not just sequence numbers: a change's seq is drawn when its transaction writes, but
// transactions commit in any order, so "every seq after the last one I saw" misses a slow transaction that
// drew a lower seq and committed later. A snapshot's xmin is exact: every transaction older than it has
// committed or aborted, and every later one is still to be seen. So each poll asks for every row with
// xid ≥ the xmin of the previous poll's snapshot (committed ones are all visible), applies the ones not
// applied yet, and moves on to its own snapshot's xmin. NOTIFY only makes this fast; the polls make it
// complete, also across a lost listener connection (NOTIFY does not keep messages for it).

/** One row of the change log; `id` "" means everything changed (TRUNCATE). */
export interface ChangeRow {
  seq: string;
  xid: bigint;
  id: string;
}

/** One poll: the snapshot's xmin, the log's identity and pruning point, and the rows since the watermark. */
export interface ChangePoll {
  xmin: bigint;
  feedId: string;
  prunedBelow: bigint;
  rows: readonly ChangeRow[];
}

export type CursorStep = { reset: false; ids: string[] } | { reset: true; reason: string };

export class ChangeLogCursor {
  #feedId: string | undefined;
  #watermark: bigint | undefined;
  /** seq → xid of rows applied that the next poll may return again (xid ≥ watermark). */
  #applied = new Map<string, bigint>();

  /** Rows with xid ≥ this are what the next poll must return; undefined before the first poll. */
  get watermark(): bigint | undefined {
    return this.#watermark;
  }

  /** A poll's result: the ids to drop (each once), or a reset when changes may have been missed. */
  absorb(poll: ChangePoll): CursorStep {
    const first = this.#watermark === undefined;
    let reason: string | undefined;
    if (!first && poll.feedId !== this.#feedId) reason = "the change log was recreated (its feed id changed)";
    else if (!first && poll.prunedBelow > this.#watermark!) reason = "changes were pruned from the log before this instance read them";
    else if (!first && poll.xmin < this.#watermark!) reason = "the database's transaction ids went backwards (restored from a backup?)";
    this.#feedId = poll.feedId;
    if (reason !== undefined) {
      this.#watermark = poll.xmin;
      this.#applied.clear();
      return { reset: true, reason };
    }
    const ids: string[] = [];
    let everything = false;
    for (const row of poll.rows) {
      if (this.#applied.has(row.seq)) continue;
      this.#applied.set(row.seq, row.xid);
      if (row.id === "") everything = true;
      else ids.push(row.id);
    }
    this.#watermark = poll.xmin;
    for (const [seq, xid] of this.#applied) if (xid < poll.xmin) this.#applied.delete(seq);
    if (everything) return { reset: true, reason: "the items table was truncated" };
    return { reset: false, ids };
  }

  /**
   * A notification: the id to drop, "" for everything, or undefined when a poll (or an earlier
   * notification) already applied it. A row older than the watermark was committed before the last poll's
   * snapshot, so that poll or an earlier one returned it.
   */
  notified(seq: string, xid: bigint, id: string): string | undefined {
    if (this.#watermark !== undefined && xid < this.#watermark) return undefined;
    if (this.#applied.has(seq)) return undefined;
    this.#applied.set(seq, xid);
    return id;
  }
}

/** `seq:xid:id` as the trigger sends it (the id may itself contain ':'), or undefined if malformed. */
export function parseNotification(payload: string): { seq: string; xid: bigint; id: string } | undefined {
  const first = payload.indexOf(":");
  const second = first === -1 ? -1 : payload.indexOf(":", first + 1);
  if (second === -1) return undefined;
  const seq = payload.slice(0, first);
  const xid = payload.slice(first + 1, second);
  if (!/^\d+$/.test(seq) || !/^\d+$/.test(xid)) return undefined;
  return { seq, xid: BigInt(xid), id: payload.slice(second + 1) };
}
