// What one origin instance at a time does for all of them: purge the edge cache of every committed change
// (when CLOUDFLARE_ZONE_ID and CLOUDFLARE_API_TOKEN are set) and prune the change log it purges from. Every
// instance that may lead checks the purge token at start; only the leader (leadership.ts) runs the purger and the pruner,
// and a new leader resumes from the durable record of changes, so nothing pending is lost with a leader.

import { ConfigError } from "../../shared/config/config-error.ts";
import type { PurgeConfig } from "../config/parse-origin-config.ts";
import type { ChangeLogPruner } from "./change-log-pruner.ts";
import { ChangeLogPruning } from "./change-log-pruner.ts";
import { CloudflarePurgeApi } from "./cloudflare-purge-api.ts";
import type { Leadership } from "./leadership.ts";
import type { PurgeSource } from "./purge-source.ts";
import { PURGER_DEFAULTS } from "./purge-policy.ts";
import { Purger, type PurgerStats } from "./purger.ts";
import { TokenBucket } from "./token-bucket.ts";

/** One purge call's deadline: Cloudflare answers in well under a second; beyond this it is retried. */
const PURGE_CALL_TIMEOUT_MS = 10_000;

export interface LeaderDutiesOptions {
  leadership: Leadership;
  /** Purge on change; undefined when not configured (then only the pruner runs, if any). */
  purge: { config: PurgeConfig; source: PurgeSource } | undefined;
  /** The change log's pruner (PostgreSQL always; SQLite only when it records changes). */
  pruner: ChangeLogPruner | undefined;
  /** Closed with the duties (the source and pruner may hold connections). */
  closeables: (() => Promise<void>)[];
  log: (line: string) => void;
  /**
   * Whether a refused token stops the start (default). A process the cluster primary starts in place of one
   * that died serves without purging instead, retrying as a refusal while running does: a token revoked since
   * the cluster started must not take a worker serving reads down with it (five refused starts stop them all).
   */
  refusalStopsStart?: boolean;
}

export interface LeaderDuties {
  /** A change was committed here or reported by the feed: the leader purges it soon. */
  changed(): void;
  readonly leading: boolean;
  /** The purger's counters; undefined when purging is not configured. */
  purgeStats(): PurgerStats | undefined;
  close(): Promise<void>;
}

/**
 * Checks the purge token (a refusal stops the start: ConfigError naming CLOUDFLARE_API_TOKEN; an API that
 * cannot be reached is logged and retried by the purger), then seeks leadership.
 */
export async function startLeaderDuties(options: LeaderDutiesOptions): Promise<LeaderDuties> {
  const { leadership, log } = options;
  let purger: Purger | undefined;
  if (options.purge !== undefined) {
    const { config, source } = options.purge;
    const api = new CloudflarePurgeApi({ base: config.apiBase, zoneId: config.zoneId, token: config.token, timeoutMs: PURGE_CALL_TIMEOUT_MS });
    purger = new Purger({ source, api, bucket: new TokenBucket({ rate: config.rate, burst: config.burst }), repeatAfterMs: config.repeatAfterMs, log });
    const verified = await purger.verify();
    if (verified.kind === "refused") {
      if (options.refusalStopsStart ?? true) {
        throw new ConfigError([{ variable: "CLOUDFLARE_API_TOKEN", message: `Cloudflare refused a purge for zone ${config.zoneId}: ${verified.detail}` }]);
      }
      log(`purge: serving without purging the edge until Cloudflare accepts the token again (tried every ${PURGER_DEFAULTS.refusedRetryMs / 1000} s)`);
    }
    if (config.repeatAfterMs > 0) log(`purge: each accepted purge is sent once more ${config.repeatAfterMs} ms later, for edge fills in flight (docs/purge.md)`);
  }
  const pruning = options.pruner === undefined ? undefined : new ChangeLogPruning(options.pruner, { log });
  // Starts and stops in order: a quick lose-then-win must not leave the purger stopped.
  let transition: Promise<unknown> = Promise.resolve();
  // Counts changes of lead, so that a pruning start waiting on the purger belongs to its lead (and none after close).
  let lead = 0;
  let closed = false;
  leadership.start((leading) => {
    const thisLead = ++lead;
    transition = transition.then(() => {
      if (leading) {
        purger?.start();
        // Pruning waits until the purger has read the newest changes for the repeats it inherits: the rows of a
        // lead vacant for minutes are old enough to be pruned before it reads them (purge-policy.ts).
        void (purger?.inherited() ?? Promise.resolve()).then(() => {
          if (lead === thisLead && !closed) pruning?.start();
        });
        return undefined;
      }
      return Promise.all([purger?.stop(), pruning?.stop()]);
    });
  });
  return {
    changed: () => purger?.wake(),
    get leading() {
      return leadership.leading;
    },
    purgeStats: () => purger?.stats(),
    async close() {
      closed = true;
      // While it still leads, the purger sends the repeats it owes first: the next leader repeats them only a
      // repeat delay after it starts (purge-policy.ts, inherited repeats).
      await transition;
      await purger?.stop({ drain: true });
      await leadership.stop();
      await transition;
      await Promise.all([purger?.stop(), pruning?.stop()]);
      for (const close of options.closeables) await close();
    },
  };
}
