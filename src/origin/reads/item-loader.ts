// Fills the cache from the store, and keeps every change to an item (a write through this instance, or one
// the change feed reports) from being undone by a read that was already running.

import type { ItemStore, StoredItem } from "../store/item-store.ts";
import { MISSING, type ItemEntry, type ReadyEntry } from "../http/wire.ts";
import type { ReadyItems } from "./ready-items.ts";

export interface LoaderHooks {
  /** A miss joined a read already in flight for the same id (tests wait on this). */
  onJoin?: (id: string) => void;
  /** Store read duration in seconds (metrics). */
  onStoreRead?: (seconds: number, ok: boolean) => void;
}

interface Flight {
  readonly generation: number;
  promise: Promise<ReadyEntry>;
}

/** What is going on for one id: only ids with a read or a write in flight have one. */
interface Activity {
  /** Bumped by every change to the id; a read or write that saw another generation must not fill the cache. */
  generation: number;
  read: Flight | undefined;
  writes: number;
  /**
   * Changes the feed reported while a write was in flight, with their transactions: one of them may be that
   * write's own, reported before the write ended here.
   */
  reported: { transaction: bigint; generation: number }[] | undefined;
}

/** A write in progress, from `beginWrite` to `endWrite`. */
export interface WriteTicket {
  readonly id: string;
  readonly generation: number;
}

/** Ids whose own write's feed report is still awaited beyond this are forgotten (their next report drops the entry). */
const MAX_AWAITED_REPORTS = 65_536;

/**
 * Concurrent misses for one id share one store read, and the ready-to-send entry (ETag, 200 and 304 bytes)
 * is built once per read.
 *
 * No stale entry is ever put back: each id with something in flight has a generation that every change
 * bumps (a write starting here, a change reported by the feed). A read fills the cache only if no change
 * happened while it ran and no write is in flight; a write fills it with its own result only if no other
 * change happened while it ran. Otherwise the entry is dropped and the next read goes to the store. A read
 * that lost the race still answers the requests waiting on it: they started before the change was known.
 *
 * On PostgreSQL the feed also reports this instance's own writes. A report that names the transaction of
 * the write whose result is cached changes nothing the cache does not already show, so it keeps the entry
 * (the next read needs no store read); a report of any other transaction drops it, as does any change that
 * came between. Only an exact match of the transaction keeps an entry: forgetting a transaction (at a reset,
 * or past MAX_AWAITED_REPORTS) only costs a store read.
 */
export class ItemLoader {
  readonly #cache: ReadyItems;
  readonly #store: ItemStore;
  readonly #hooks: LoaderHooks;
  readonly #entryOf: (item: StoredItem) => ItemEntry;
  readonly #activity = new Map<string, Activity>();
  /** Id → the transaction of this instance's write whose result is cached, until the feed reports it. */
  readonly #awaitedReports = new Map<string, bigint>();
  storeReads = 0;
  coalesced = 0;
  /** Feed reports of this instance's own writes, whose cached result was kept. */
  ownChangesKept = 0;

  /** `writing(id)`: a write is about to be sent to the store (the membership filter learns the id first). */
  readonly #writing: (id: string) => void;

  constructor(
    cache: ReadyItems,
    store: ItemStore,
    entryOf: (item: StoredItem) => ItemEntry,
    hooks: LoaderHooks = {},
    writing: (id: string) => void = () => {},
  ) {
    this.#writing = writing;
    this.#cache = cache;
    this.#store = store;
    this.#entryOf = entryOf;
    this.#hooks = hooks;
  }

  /** Called on a cache miss. */
  load(id: string): Promise<ReadyEntry> {
    const activity = this.#activityOf(id);
    const joined = activity.read;
    if (joined !== undefined) {
      this.coalesced++;
      this.#hooks.onJoin?.(id);
      return joined.promise;
    }
    // Registered before the read starts, so even a store that fails synchronously cleans up after itself.
    const flight: Flight = { generation: activity.generation, promise: undefined as unknown as Promise<ReadyEntry> };
    activity.read = flight;
    flight.promise = this.#read(id, activity, flight);
    return flight.promise;
  }

  async #read(id: string, activity: Activity, flight: Flight): Promise<ReadyEntry> {
    this.storeReads++;
    const started = performance.now();
    let entry: ReadyEntry;
    try {
      const row = await this.#store.get(id);
      this.#hooks.onStoreRead?.((performance.now() - started) / 1000, true);
      entry = row === undefined ? MISSING : this.#entryOf(row);
    } catch (error) {
      this.#hooks.onStoreRead?.((performance.now() - started) / 1000, false);
      this.#settleRead(id, activity, flight);
      throw error;
    }
    const unchanged = activity.generation === flight.generation && activity.writes === 0 && this.#activity.get(id) === activity;
    this.#settleRead(id, activity, flight);
    if (unchanged) this.#cache.set(id, entry);
    return entry;
  }

  #settleRead(id: string, activity: Activity, flight: Flight): void {
    if (activity.read === flight) activity.read = undefined;
    this.#forgetIfIdle(id, activity);
  }

  /** The ids of writes begun and not yet ended (the membership filter keeps them through a rebuild). */
  writesInFlight(): string[] {
    const ids: string[] = [];
    for (const [id, activity] of this.#activity) if (activity.writes > 0) ids.push(id);
    return ids;
  }

  /**
   * A write to `id` is about to be sent to the store: from now on no read that started earlier fills the
   * cache, and no read joins one that did.
   */
  beginWrite(id: string): WriteTicket {
    this.#writing(id);
    const activity = this.#activityOf(id);
    activity.generation++;
    activity.read = undefined;
    activity.writes++;
    // Only the newest write can still be cached (this bump is no report), so only reports from now on can
    // count: the list never outgrows one write, however many overlap.
    activity.reported = undefined;
    return { id, generation: activity.generation };
  }

  /**
   * The write ended: `entry` is what the store now holds (write-through, so the writer reads its own write
   * without a store read), or undefined when the outcome is unknown (failed or timed out: it may have
   * committed); `transaction`, the one it committed in if the feed will report it. Cached only if nothing
   * else changed the id meanwhile (the feed reporting this very write does not count); otherwise dropped.
   */
  endWrite(ticket: WriteTicket, entry: ReadyEntry | undefined, transaction?: bigint): void {
    const activity = this.#activity.get(ticket.id);
    let unchanged = false;
    let reported = false;
    if (activity !== undefined) {
      let own = 0;
      if (transaction !== undefined) {
        for (const report of activity.reported ?? []) if (report.transaction === transaction && report.generation > ticket.generation) own++;
      }
      reported = own > 0;
      unchanged = activity.generation === ticket.generation + own;
      this.#writeDone(activity);
      // Always: a read that started while the write ran may have read the row as it was before the commit,
      // and must not put it back over what the write cached.
      activity.generation++;
      this.#forgetIfIdle(ticket.id, activity);
    }
    if (unchanged && entry !== undefined) {
      this.#cache.set(ticket.id, entry);
      if (reported) this.ownChangesKept++;
      else if (transaction !== undefined) {
        if (this.#awaitedReports.size >= MAX_AWAITED_REPORTS && !this.#awaitedReports.has(ticket.id)) this.#awaitedReports.clear();
        this.#awaitedReports.set(ticket.id, transaction);
      }
    } else this.#cache.delete(ticket.id);
  }

  /**
   * The write was refused by its precondition and wrote nothing, so the cache keeps what it holds. Reads
   * that started before `beginWrite` still do not fill the cache (it detached them): at most one more
   * store read.
   */
  abandonWrite(ticket: WriteTicket): void {
    const activity = this.#activity.get(ticket.id);
    if (activity === undefined) return;
    this.#writeDone(activity);
    this.#forgetIfIdle(ticket.id, activity);
  }

  /**
   * The change feed reports a committed change to `id`, made in `transaction` if it says: drop the entry and
   * keep reads in flight from caching it, unless it is the report of the write whose result is cached.
   */
  changed(id: string, transaction?: bigint): void {
    const awaited = this.#awaitedReports.get(id);
    if (awaited !== undefined) {
      this.#awaitedReports.delete(id);
      if (awaited === transaction) {
        this.ownChangesKept++;
        return;
      }
    }
    const activity = this.#activity.get(id);
    if (activity !== undefined) {
      activity.generation++;
      activity.read = undefined;
      if (activity.writes > 0 && transaction !== undefined) (activity.reported ??= []).push({ transaction, generation: activity.generation });
    }
    this.#cache.delete(id);
  }

  /** Changes may have been missed (the feed lost track): drop everything, and keep every read in flight from caching. */
  invalidateAll(): void {
    this.#awaitedReports.clear();
    for (const activity of this.#activity.values()) {
      activity.generation++;
      activity.read = undefined;
    }
    this.#cache.clear();
  }

  #writeDone(activity: Activity): void {
    if (--activity.writes === 0) activity.reported = undefined;
  }

  #activityOf(id: string): Activity {
    let activity = this.#activity.get(id);
    if (activity === undefined) {
      activity = { generation: 0, read: undefined, writes: 0, reported: undefined };
      this.#activity.set(id, activity);
    }
    return activity;
  }

  #forgetIfIdle(id: string, activity: Activity): void {
    if (activity.read === undefined && activity.writes === 0 && this.#activity.get(id) === activity) this.#activity.delete(id);
  }
}
