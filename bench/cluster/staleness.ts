// Stale reads, decided after the run from what the client saw (pure; test/node/cluster-script.test.ts).
//
// A read is stale when the version it returned is older than the last write of that id committed (its 204
// received) before the read was sent. Its staleness age is how long before the read was sent the first
// write it missed was committed: the time the answer had been out of date. The feed's bound is the
// staleness a healthy feed allows; a stale read older than it is a broken promise (must be 0).
//
// Versions are ordered by commit, which is the order of the 204s only because the benchmark never has two
// writes of one id in flight at once (traffic.ts keeps them apart). A read's version is known from its
// ETag: a write's 204 announces the ETag of what it wrote, and every seeded item starts with one of
// `initialEtags`. The 204 arrives after the commit, so "committed before the read was sent" is judged
// conservatively: a read sent between a commit and its 204 is never called stale.

export interface CommittedWrite {
  id: string;
  /** The ETag the 204 announced. */
  etag: string;
  /** When the 204 arrived (ms, the run's clock). */
  committedAt: number;
}

export interface ObservedRead {
  id: string;
  instance: number;
  /** When the request was sent (ms, the run's clock). */
  sentAt: number;
  /** The ETag of the answer (a 200). */
  etag: string;
}

export interface StaleRead {
  id: string;
  instance: number;
  sentAt: number;
  /** ms since the first write the read missed was committed. */
  ageMs: number;
  /** How many committed writes it missed. */
  versionsBehind: number;
}

export interface StalenessReport {
  reads: number;
  /** Reads older than the last commit before they were sent, whatever their age. */
  stale: number;
  /** Of those, older than the bound (must be 0). */
  beyondBound: number;
  boundMs: number;
  /** Largest staleness age seen (0 when none). */
  maxAgeMs: number;
  /** Reads whose ETag is neither an initial one nor announced by any write (a lost 204?): not judged. */
  unknownVersion: number;
  /** Up to 10 stale reads, oldest first. */
  worst: StaleRead[];
}

export function staleness(
  writes: readonly CommittedWrite[],
  reads: readonly ObservedRead[],
  options: { initialEtags: ReadonlySet<string>; boundMs: number },
): StalenessReport {
  // Per id: its writes in commit order, and each announced ETag's position (1 = after the first write).
  const history = new Map<string, { commits: number[]; position: Map<string, number> }>();
  for (const write of [...writes].sort((a, b) => a.committedAt - b.committedAt)) {
    let h = history.get(write.id);
    if (h === undefined) history.set(write.id, (h = { commits: [], position: new Map() }));
    h.commits.push(write.committedAt);
    h.position.set(write.etag, h.commits.length);
  }
  const report: StalenessReport = { reads: reads.length, stale: 0, beyondBound: 0, boundMs: options.boundMs, maxAgeMs: 0, unknownVersion: 0, worst: [] };
  const stale: StaleRead[] = [];
  for (const read of reads) {
    const h = history.get(read.id);
    const position = h?.position.get(read.etag) ?? (options.initialEtags.has(read.etag) ? 0 : undefined);
    if (position === undefined) {
      report.unknownVersion++;
      continue;
    }
    if (h === undefined) continue; // never written: always current
    const committedBefore = countAtOrBelow(h.commits, read.sentAt);
    if (position >= committedBefore) continue;
    const ageMs = read.sentAt - h.commits[position]!;
    stale.push({ id: read.id, instance: read.instance, sentAt: read.sentAt, ageMs, versionsBehind: committedBefore - position });
  }
  report.stale = stale.length;
  for (const s of stale) {
    if (s.ageMs > options.boundMs) report.beyondBound++;
    if (s.ageMs > report.maxAgeMs) report.maxAgeMs = s.ageMs;
  }
  report.worst = stale.sort((a, b) => b.ageMs - a.ageMs).slice(0, 10);
  return report;
}

/** How many of ascending `sorted` are ≤ x (binary search). */
function countAtOrBelow(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
