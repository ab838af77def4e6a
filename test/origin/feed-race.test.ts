// No race leaves a stale entry behind: a read that started before a change and fills the cache after the
// change's invalidation arrived must not put the old version back (with a one-day TTL it would stay a day).
// Randomised interleavings (fast-check) of held reads, writes through this instance, another instance and
// plain SQL, on a real PostgreSQL; at the end every id must be served as the database holds it, by a feed
// that is healthy (so no entry was merely re-read for its age).
import fc from "fast-check";
import postgresClient from "postgres";
import { describe, expect, it } from "vitest";
import type { StoredItem } from "../../src/origin/store/item-store.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { registerCleanup, storeWith, until as waitUntil } from "./harness.ts";
import { startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();
let debugState = () => "";

type Op =
  | { kind: "read"; id: number; hold: boolean }
  | { kind: "write"; via: "self" | "other" | "sql"; id: number }
  | { kind: "release"; which: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("read" as const), id: fc.nat({ max: 1 }), hold: fc.boolean() }),
  fc.record({ kind: fc.constant("write" as const), via: fc.constantFrom("self" as const, "other" as const, "sql" as const), id: fc.nat({ max: 1 }) }),
  fc.record({ kind: fc.constant("release" as const), which: fc.nat({ max: 3 }) }),
);

/** The shared wait, with the race's state in its error. */
const until = (condition: () => boolean | Promise<boolean>, what: string) => waitUntil(condition, () => `${what}${debugState()}`);

describe("change feed races", () => {
  it("a read that started before a change never puts the old version back", async () => {
    const url = await postgres.database();
    const options = { url, display: url, poolSize: 4, timeoutMs: 5000, applicationName: "race-test" };
    await preparePostgres(options, undefined);
    const inner = new OwnedTableStore(options);
    registerCleanup(() => inner.close());
    // Reads marked "hold" wait after the store answered, until the test releases them.
    let holdNext = false;
    const held: (() => void)[] = [];
    /** Store reads running right now (not yet parked or returned). */
    let inStore = 0;
    const store = storeWith(inner, {
      async get(id: string): Promise<StoredItem | undefined> {
        const hold = holdNext;
        holdNext = false;
        inStore++;
        let row: StoredItem | undefined;
        try {
          row = await inner.get(id);
        } finally {
          inStore--;
        }
        if (hold) await new Promise<void>((resolve) => held.push(resolve));
        return row;
      },
    });
    const sql = postgresClient(url, { max: 1, onnotice: () => {} });
    registerCleanup(() => sql.end({ timeout: 2 }));
    const self = await startOnPostgres(url, { FEED_POLL_MS: "100" }, { store });
    const other = await startOnPostgres(url, { FEED_POLL_MS: "100" });
    debugState = () => ` [held ${held.length}, in the store ${inStore}, coalesced ${self.loader.coalesced}]`;
    let run = 0;

    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        run++;
        const id = (n: number) => `r${run}-${n}`;
        const pending: Promise<unknown>[] = [];
        let version = 0;
        for (const o of ops) {
          if (o.kind === "read") {
            holdNext = o.hold;
            const before = held.length;
            const joins = self.loader.coalesced;
            let answered = false;
            pending.push(
              fetch(`${self.url}/items/${id(o.id)}`, { signal: AbortSignal.timeout(8000) })
                .then((r) => r.text())
                .finally(() => (answered = true)),
            );
            // A held read is parked once its store read returned; a hit is answered without the store, and a
            // miss for an id already being read joins that read.
            if (o.hold) await until(() => held.length > before || answered || self.loader.coalesced > joins, "the read to be parked, joined or answered");
            holdNext = false;
          } else if (o.kind === "write") {
            const changes = self.feed.stats.changes;
            const body = JSON.stringify({ v: ++version, via: o.via });
            if (o.via === "sql") {
              await sql`INSERT INTO slim_edge_items VALUES (${id(o.id)}, 1, 'Sq', ${Buffer.from(body)})
                ON CONFLICT (id) DO UPDATE SET version = slim_edge_items.version + 1, body = excluded.body`;
            } else {
              const target = o.via === "self" ? self : other;
              const res = await fetch(`${target.url}/items/${id(o.id)}`, { method: "PUT", headers: { "content-type": "application/json" }, body });
              expect(res.status).toBe(204);
            }
            // The invalidation has reached this instance before anything else happens.
            await until(() => self.feed.stats.changes > changes, "the change to reach the feed");
          } else if (held.length > 0) {
            held.splice(o.which % held.length, 1)[0]!();
          }
        }
        // A read may have taken the hold and still be in the store: release only once none is.
        do {
          await until(() => inStore === 0, "the store reads to finish");
          for (const release of held.splice(0)) release();
        } while (inStore > 0 || held.length > 0);
        await Promise.all(pending);
        for (const n of [0, 1]) {
          const rows = await sql<{ body: Buffer }[]>`SELECT body FROM slim_edge_items WHERE id = ${id(n)} AND body IS NOT NULL`;
          const truth = rows[0]?.body.toString() ?? "";
          await until(async () => {
            const res = await fetch(`${self.url}/items/${id(n)}`, { signal: AbortSignal.timeout(8000) }).catch((e: unknown) => {
              throw new Error(`GET ${id(n)} got no answer: ${String(e)}${debugState()}`);
            });
            return truth === "" ? res.status === 404 : (await res.text()) === truth;
          }, `${id(n)} to be served as the database holds it (${truth || "absent"})`);
        }
        expect(self.feed.healthy).toBe(true);
        expect(self.feed.stats.resets).toBe(0);
      }),
      { numRuns: 50 },
    );
  }, 180_000);
});
