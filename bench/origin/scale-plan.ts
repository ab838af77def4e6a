// Which of the requested sizes this machine can run side by side (bench:origin --scale), decided before
// anything starts: every origin is up at once, so their caches, filters and processes must fit in the
// memory available together, and their seeded stores on the disk. Pure: tested with made-up machines.

export interface SizePlan {
  entries: number;
  cacheMaxBytes: number;
  /** Bytes of memory this origin is expected to hold: cache + membership filter + the process itself. */
  memoryBytes: number;
  /** Disk the store still needs (0 when a seeded file is reused). */
  diskBytes: number;
}

export interface Machine {
  /** Memory available now (MemAvailable). */
  availableMemory: number;
  /** Kept free for everything else (load generators, the stores' page cache, other processes). */
  reserve: number;
  freeDisk: number;
}

/** Memory an origin needs besides its cache and filter (runtime, heap, SQLite, sockets). */
export const PROCESS_BYTES = 320 * 2 ** 20;
/** SQLite file + WAL after seeding, per item (measured: about 126 B each for the file and the WAL). */
export const DISK_BYTES_PER_ITEM = 300;

/** The membership filter of a store of `items` ids (auto: twice the ids, at least 1M; about 1.2 B per id). */
export const filterBytes = (items: number): number => Math.ceil(1.3 * Math.max(1_000_000, 2 * items));

const GiB = 2 ** 30;
const gib = (n: number) => `${(n / GiB).toFixed(1)} GiB`;

/**
 * Takes the sizes in ascending order while they fit; a size that does not is refused with the reason
 * (and the next, smaller-or-equal needs are still tried). `cacheMaxBytes(entries)` sizes each cache,
 * `storeExists(entries)` says whether a seeded store can be reused.
 */
export function planSizes(
  sizes: readonly number[],
  machine: Machine,
  cacheMaxBytes: (entries: number) => number,
  storeExists: (entries: number) => boolean,
): { plans: SizePlan[]; refused: { entries: number; reason: string }[] } {
  const plans: SizePlan[] = [];
  const refused: { entries: number; reason: string }[] = [];
  let memoryLeft = machine.availableMemory - machine.reserve;
  let diskLeft = machine.freeDisk;
  for (const entries of [...sizes].sort((a, b) => a - b)) {
    const cache = cacheMaxBytes(entries);
    const memoryBytes = cache + filterBytes(2 * entries) + PROCESS_BYTES;
    const diskBytes = storeExists(entries) ? 0 : 2 * entries * DISK_BYTES_PER_ITEM;
    if (memoryBytes > memoryLeft) {
      refused.push({
        entries,
        reason:
          `needs ${gib(memoryBytes)} of memory (CACHE_MAX_BYTES ${gib(cache)}, its membership filter and the process) beside the smaller sizes, ` +
          `${gib(Math.max(0, memoryLeft))} is left of the ${gib(machine.availableMemory)} available (${gib(machine.reserve)} kept free): use smaller --sizes`,
      });
      continue;
    }
    if (diskBytes > diskLeft) {
      refused.push({ entries, reason: `its store of ${(2 * entries).toLocaleString("en")} items needs about ${gib(diskBytes)} of disk, ${gib(Math.max(0, diskLeft))} is free` });
      continue;
    }
    memoryLeft -= memoryBytes;
    diskLeft -= diskBytes;
    plans.push({ entries, cacheMaxBytes: cache, memoryBytes, diskBytes });
  }
  return { plans, refused };
}
