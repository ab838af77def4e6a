// The change feed of one origin process among several on one machine over the embedded SQLite store
// (ORIGIN_PROCESSES > 1). SQLite tells no other process about a commit, so each process reports the writes
// it committed to the cluster's primary (start-origin's `onCommitted`), and the primary relays each one to
// every other process, where it arrives here (cluster/worker-main.ts routes the primary's messages):
//
//   worker A: PUT committed ─► onCommitted(id) ─IPC─► primary ─IPC─► worker B: changed(id) ─► B's cache drops id
//
// What makes this as sound as the PostgreSQL feed, not merely usually right:
// - Nothing is lost while both ends live: node's IPC channel is an ordered, reliable pipe, and a message the
//   pipe cannot take yet waits in the sender's queue. A process that dies may take with it a change it
//   committed but had not sent yet (it commits in its writer thread before it learns of it), so when one dies
//   the primary tells every other process it lost track (`lostTrack`: they drop everything). A process that
//   (re)starts starts with an empty cache, and reads only what was committed before it read.
// - Nothing stale is put back: a relayed change bumps the id's generation in the loader like any other
//   change, so a read that started before the write cannot fill the cache with the old version after it.
// - A primary that is slow holds changes back for as long as it is slow. It also sends a heartbeat
//   (cluster/change-relay.ts) every quarter of the bound, and a process that has heard nothing from it for
//   longer than FEED_STALE_BOUND_MS calls this feed unhealthy: cached entries older than the bound are then
//   re-read from the store before they are served (item-reads.ts), exactly as with a PostgreSQL feed that
//   lost its listener. Staleness is thus at most the IPC hop while the primary keeps up, and at most the
//   bound when it does not.

import type { ChangeFeed, ChangeFeedStats, ChangeHandlers } from "./change-feed.ts";

export interface RelayedChangeFeedOptions {
  /** How long the feed is trusted without a word from the primary (FEED_STALE_BOUND_MS). */
  staleBoundMs: number;
  /** Clock in ms (tests move it). */
  now?: () => number;
}

export class RelayedChangeFeed implements ChangeFeed {
  readonly stats: ChangeFeedStats = { changes: 0, resets: 0, pollFailures: 0, listens: 0, ignored: 0 };
  readonly #staleBoundMs: number;
  readonly #now: () => number;
  #handlers: ChangeHandlers | undefined;
  #lastHeard: number;

  constructor(options: RelayedChangeFeedOptions) {
    this.#staleBoundMs = options.staleBoundMs;
    this.#now = options.now ?? (() => performance.now());
    this.#lastHeard = this.#now();
  }

  /** True while the primary was heard from within the bound (a relayed change or a heartbeat). */
  get healthy(): boolean {
    return this.#now() - this.#lastHeard <= this.#staleBoundMs;
  }

  start(handlers: ChangeHandlers): Promise<void> {
    // start() runs before the port opens: the cache is empty and no read is in flight, so what was relayed
    // before it had nothing to drop.
    this.#handlers = handlers;
    this.#lastHeard = this.#now();
    this.stats.listens++;
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.#handlers = undefined;
    return Promise.resolve();
  }

  /** Another process committed a change to `id`. */
  changed(id: string): void {
    this.#lastHeard = this.#now();
    if (this.#handlers === undefined) return;
    this.stats.changes++;
    this.#handlers.changed(id);
  }

  /** The primary is alive: everything it received before it sent this has been relayed. */
  heartbeat(): void {
    this.#lastHeard = this.#now();
  }

  /** Changes may have been lost (a process died between its commit and its report): drop everything. */
  lostTrack(reason: string): void {
    this.#lastHeard = this.#now();
    if (this.#handlers === undefined) return;
    this.stats.resets++;
    this.#handlers.lostTrack(reason);
  }
}
