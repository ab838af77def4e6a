// Where one instance stands in the change log, and what it must do with what it reads: which changes to
// apply (each once), or "drop everything" when it cannot prove it missed nothing. Pure: the SQL is in postgres-change-feed.ts.
//
// Why snapshots and not just sequence numbers: a change's seq is drawn when its transaction writes, but
// transactions commit in any order, so "every seq after the last one I saw" misses a slow transaction that
// drew a lower seq and committed later. A snapshot (pg_current_snapshot: xmin, xmax and the xids running
// between them) says exactly which transactions had finished when it was taken. So each poll takes one, and
// reads only the rows of transactions the previous poll's snapshot did not see as finished (xid ≥ its xmax,
// or one of its running xids): every row its own snapshot sees, minus those an earlier poll already read.
// By induction, after each poll every change whose transaction its snapshot sees as finished has been
// applied, and each committed row is read by exactly one poll.
//
// Why not "xid ≥ the previous xmin" (what this did before): one transaction left open anywhere on the
// server (xids are cluster-wide: any database, an idle-in-transaction session, a forgotten prepared
// transaction) holds xmin back, and every poll re-read every row logged since; at a few hundred thousand
// rows a poll outlasted STORE_TIMEOUT_MS and the feed went unhealthy. With the previous snapshot, a poll
// reads what was committed since the last one, however old the oldest open transaction is.
//
// NOTIFY only makes this fast; the polls make it complete, also across a lost listener connection (NOTIFY
// does not keep messages for it). A notified row is remembered (by seq) until a poll's snapshot sees its
// transaction as finished; from then on no poll returns it again and a late duplicate is recognised by its
// xid alone, so what is remembered is at most what was committed since the last poll.

/** Why a change with id "" resets the feed: a TRUNCATE logs one, and so may an operator (docs/origin.md). */
export const EVERYTHING_CHANGED = "the change log says everything changed (the items table was truncated, or it was recorded by hand)";

/** One row of the change log; `id` "" means everything changed (TRUNCATE). */
export interface ChangeRow {
  seq: string;
  xid: bigint;
  id: string;
}

/** A pg_snapshot: xids below xmin have finished, xmax and above had not started, `xip` were running. */
export interface Snapshot {
  xmin: bigint;
  xmax: bigint;
  xip: readonly bigint[];
}

/** One poll: its snapshot, the log's identity and pruning point, and the rows the previous snapshot did not see. */
export interface ChangePoll {
  snapshot: Snapshot;
  feedId: string;
  prunedBelow: bigint;
  rows: readonly ChangeRow[];
}

/** `changes`: the rows to apply, each once (the transaction that made each lets an instance tell its own writes). */
export type CursorStep = { reset: false; changes: ChangeRow[] } | { reset: true; reason: string };

export class ChangeLogCursor {
  #feedId: string | undefined;
  /** The last poll's snapshot: every change of a transaction it sees as finished has been applied. */
  #since: Snapshot | undefined;
  /** seq → xid of rows applied (by a notification) whose transaction #since does not see as finished. */
  #applied = new Map<string, bigint>();

  /** The last poll's snapshot (the next poll reads what it did not see); undefined before the first poll. */
  get since(): Snapshot | undefined {
    return this.#since;
  }

  /** Rows remembered as applied that a poll may still return (bounded by what was committed since the last poll). */
  get held(): number {
    return this.#applied.size;
  }

  /** A poll's result: the changes to apply (each once), or a reset when changes may have been missed. */
  absorb(poll: ChangePoll): CursorStep {
    const since = this.#since;
    const { snapshot } = poll;
    let reason: string | undefined;
    if (since !== undefined) {
      if (poll.feedId !== this.#feedId) reason = "the change log was recreated (its feed id changed)";
      // Every row this instance still needs has xid ≥ since.xmin (older ones were finished and seen).
      else if (poll.prunedBelow > since.xmin) reason = "changes were pruned from the log before this instance read them";
      else if (snapshot.xmin < since.xmin || snapshot.xmax < since.xmax) reason = "the database's transaction ids went backwards (restored from a backup?)";
    }
    this.#feedId = poll.feedId;
    this.#since = snapshot;
    if (reason !== undefined) {
      this.#applied.clear();
      return { reset: true, reason };
    }
    const changes: ChangeRow[] = [];
    let everything = false;
    for (const row of poll.rows) {
      // Already applied: by an earlier poll (its transaction had finished then), or by a notification.
      if ((since !== undefined && finishedIn(row.xid, since)) || this.#applied.has(row.seq)) continue;
      if (row.id === "") everything = true;
      else changes.push(row);
    }
    // Rows of transactions this snapshot sees as finished: this poll returned them, no later poll will.
    for (const [seq, xid] of this.#applied) if (finishedIn(xid, snapshot)) this.#applied.delete(seq);
    if (everything) return { reset: true, reason: EVERYTHING_CHANGED };
    return { reset: false, changes };
  }

  /**
   * A notification: the id of the change to apply, "" for everything, or undefined when a poll (or an earlier
   * notification) already applied it. A row whose transaction the last poll's snapshot sees as finished was
   * returned by that poll or an earlier one.
   */
  notified(seq: string, xid: bigint, id: string): string | undefined {
    if (this.#since !== undefined && finishedIn(xid, this.#since)) return undefined;
    if (this.#applied.has(seq)) return undefined;
    this.#applied.set(seq, xid);
    return id;
  }
}

/**
 * Whether `snapshot` sees transaction `xid` as finished (committed or aborted), as pg_visible_in_snapshot
 * does: a committed transaction's rows are visible in it exactly when this is true.
 */
export function finishedIn(xid: bigint, snapshot: Snapshot): boolean {
  if (xid < snapshot.xmin) return true;
  if (xid >= snapshot.xmax) return false;
  return !snapshot.xip.includes(xid);
}

/** `xmin:xmax:xip,…` as pg_snapshot prints it, or undefined if malformed. */
export function parseSnapshot(text: string): Snapshot | undefined {
  const match = /^(\d+):(\d+):((?:\d+(?:,\d+)*)?)$/.exec(text);
  if (match === null) return undefined;
  const xip = match[3] === "" ? [] : match[3]!.split(",").map(BigInt);
  return { xmin: BigInt(match[1]!), xmax: BigInt(match[2]!), xip };
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
