// On PostgreSQL every instance's change feed also reports the writes the instance made itself. The report of
// the write whose result the instance cached keeps that entry: the writer's next read needs no store read,
// whether the report comes after the write's answer or before it. Any other change still drops the entry
// (item-loader.test.ts checks the loader against a model database over random interleavings).
import { describe, expect, it } from "vitest";
import type { RunningOrigin } from "../../src/origin/start-origin.ts";
import type { ItemStore, PutResult, WriteCondition } from "../../src/origin/store/item-store.ts";
import { OwnedTableStore } from "../../src/origin/store/postgres/owned-table-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { registerCleanup, storeWith, until } from "./harness.ts";
import { startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

const write = (origin: RunningOrigin, method: "PUT" | "DELETE", body?: string) =>
  fetch(`${origin.url}/items/w`, { method, headers: { "content-type": "application/json" }, ...(body === undefined ? {} : { body }) });

async function read(origin: RunningOrigin): Promise<string> {
  const res = await fetch(`${origin.url}/items/w`);
  return `${res.status} ${await res.text()}`;
}

async function ownWritesMetric(origin: RunningOrigin): Promise<number> {
  return (await origin.metrics.registry.getSingleMetric("origin_feed_own_writes_total")!.get()).values[0]!.value;
}

describe("the change feed's reports of an instance's own writes", () => {
  it("keep what the writer cached (no store read); another instance's write still drops it", async () => {
    const url = await postgres.database();
    const a = await startOnPostgres(url, { FEED_POLL_MS: "100" });
    const b = await startOnPostgres(url, { FEED_POLL_MS: "100" });

    expect((await write(a, "PUT", '{"v":1}')).status).toBe(204);
    await until(() => a.feed.stats.changes === 1 && b.feed.stats.changes === 1, "both feeds to report the write");
    expect(a.loader.ownChangesKept).toBe(1);
    const reads = a.loader.storeReads;
    expect(await read(a)).toBe('200 {"v":1}');
    expect(a.loader.storeReads).toBe(reads);

    expect((await write(b, "PUT", '{"v":2}')).status).toBe(204);
    await until(() => a.feed.stats.changes === 2, "a's feed to report b's write");
    expect(await read(a)).toBe('200 {"v":2}');
    expect(a.loader.storeReads).toBe(reads + 1);
    expect(b.loader.ownChangesKept).toBe(1);

    expect((await write(a, "DELETE")).status).toBe(204);
    await until(() => a.feed.stats.changes === 3, "a's feed to report its delete");
    expect(await read(a)).toBe("404 ");
    expect(a.loader.storeReads).toBe(reads + 1);
    expect(a.loader.ownChangesKept).toBe(2);
    expect(await ownWritesMetric(a)).toBe(2);
  });

  it("keep it when the report is applied before the write has ended in the instance", async () => {
    const url = await postgres.database();
    const options = { url, display: url, poolSize: 2, timeoutMs: 5000, applicationName: "own-writes-test" };
    await preparePostgres(options, undefined);
    const inner = new OwnedTableStore(options);
    registerCleanup(() => inner.close());
    let origin: RunningOrigin | undefined;
    // The write's answer comes back from the store only once the feed has applied its report.
    const store: ItemStore = storeWith(inner, {
      async put(id: string, body: Uint8Array, condition?: WriteCondition): Promise<PutResult> {
        const changes = origin!.feed.stats.changes;
        const written = await inner.put(id, body, condition);
        await until(() => origin!.feed.stats.changes > changes, "the feed to report the write first");
        return written;
      },
    });
    origin = await startOnPostgres(url, { FEED_POLL_MS: "100" }, { store });

    expect((await write(origin, "PUT", '{"v":1}')).status).toBe(204);
    expect(origin.loader.ownChangesKept).toBe(1);
    const reads = origin.loader.storeReads;
    expect(await read(origin)).toBe('200 {"v":1}');
    expect(origin.loader.storeReads).toBe(reads);
  });
});
