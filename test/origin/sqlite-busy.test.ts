// The embedded store when SQLite's write lock is held by someone else (another origin process stalled in its
// fsync, a backup tool, another program) and when its writer thread stops: writes fail with the error the
// HTTP layer answers 503, nothing is reported committed that was not, and the next write works again
// without a restart. Real SQLite files; the lock is held by a connection of the test's own.
import { spawnSync } from "node:child_process";
import { mkdirSync, renameSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StoreUnavailableError } from "../../src/origin/store/item-store.ts";
import { SqliteItemStore } from "../../src/origin/store/sqlite-store.ts";
import { get, RawConnection, registerCleanup, start, tempDir, withBody } from "./harness.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array | undefined) => (body === undefined ? undefined : new TextDecoder().decode(body));
/** busy_timeout for these tests: any wait ends in SQLITE_BUSY soon, whatever the machine's speed. */
const BUSY_MS = 20;

/** A store whose log lines are kept, and an event per line wanted. */
function open(path: string, options: { recordChanges?: boolean } = {}) {
  const lines: string[] = [];
  const wanted: { pattern: RegExp; resolve: () => void }[] = [];
  const store = new SqliteItemStore(path, {
    ...options,
    busyTimeoutMs: BUSY_MS,
    log: (line) => {
      lines.push(line);
      for (const w of wanted.filter((w) => w.pattern.test(line))) {
        wanted.splice(wanted.indexOf(w), 1);
        w.resolve();
      }
    },
  });
  registerCleanup(() => store.close());
  const logged = (pattern: RegExp) =>
    lines.some((l) => pattern.test(l)) ? Promise.resolve() : new Promise<void>((resolve) => wanted.push({ pattern, resolve }));
  return { store, lines, logged };
}

/** Another connection to the file holding SQLite's write lock until release(). */
function holdWriteLock(path: string) {
  const other = new DatabaseSync(path);
  other.exec("PRAGMA busy_timeout = 0");
  other.exec("BEGIN IMMEDIATE");
  return {
    other,
    release: () => {
      other.exec("ROLLBACK");
      other.close();
    },
  };
}

/** The store's writer threads, as they are sent requests. */
function watchWriters(): () => Worker[] {
  const postMessage = vi.spyOn(Worker.prototype, "postMessage");
  return () => [...new Set(postMessage.mock.contexts as Worker[])];
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("SQLite store, write lock held elsewhere", () => {
  it("fails writes waiting past busy_timeout with StoreUnavailableError, writes nothing, and serves the next write", async () => {
    const path = join(tempDir(), "items.sqlite");
    const { store } = open(path, { recordChanges: true });
    const first = (await store.put("a", bytes('{"v":1}'))).etag;
    const lock = holdWriteLock(path);

    // Several at once: they share one transaction, and all fail with it (none retried alone).
    const during = await Promise.allSettled([store.put("a", bytes('{"v":2}')), store.put("b", bytes('{"b":1}')), store.delete("a")]);
    for (const outcome of during) {
      expect(outcome.status).toBe("rejected");
      const error = (outcome as PromiseRejectedResult).reason as Error;
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error.message).toMatch(/locked by another connection .*busy_timeout \(20 ms\).*nothing was written/);
    }
    // The purger's writes go the same way.
    await expect(store.markChangesPurgedUpTo(100, 10)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.pruneChanges(Date.now(), Date.now(), 10)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.ping()).toBe(true); // reads and the writer are fine: only the lock is taken
    lock.release();

    // Nothing of the failed writes committed: the version counts on from the first PUT, the outbox holds it alone.
    expect(text((await store.get("a"))?.body)).toBe('{"v":1}');
    expect(await store.get("b")).toBeUndefined();
    expect(store.pendingChanges(10).map((c) => c.id)).toEqual(["a"]);
    const second = (await store.put("a", bytes('{"v":3}'))).etag;
    expect(second.slice(0, 3)).toBe(first.slice(0, 3)); // same epoch…
    expect(second).toBe(first.replace(/1"$/, '2"')); // …version 2
    expect(text((await store.get("a"))?.body)).toBe('{"v":3}');
    expect(await store.delete("a")).toEqual({ deleted: true, transaction: undefined });
    expect(await store.get("a")).toBeUndefined();
    expect(store.pendingChanges(10).map((c) => c.id)).toEqual(["a", "a", "a"]);
  });

  it("answers PUT and DELETE 503 while the lock is held, 204 after, and /healthz stays 204", async () => {
    const dir = tempDir();
    const path = join(dir, "items.sqlite");
    const origin = await start({}, { dir, store: new SqliteItemStore(path, { busyTimeoutMs: BUSY_MS, log: () => {} }) });
    const c = await RawConnection.open(origin.port);
    expect((await c.send(withBody("PUT", "/items/a", '{"v":1}'))).status).toBe(204);
    const lock = holdWriteLock(path);
    const refused = await c.send(withBody("PUT", "/items/a", '{"v":2}'));
    expect(refused.status).toBe(503);
    expect(refused.body.toString()).toMatch(/store unavailable/);
    expect((await c.send(get("/items/a", {}, "DELETE"))).status).toBe(503);
    expect((await c.send(get("/items/a"))).body.toString()).toBe('{"v":1}');
    expect((await c.send(get("/healthz"))).status).toBe(204);
    lock.release();
    expect((await c.send(withBody("PUT", "/items/a", '{"v":3}'))).status).toBe(204);
    expect((await c.send(get("/items/a"))).body.toString()).toBe('{"v":3}');
  });
});

describe("SQLite store, writer thread stops", () => {
  it("rejects the write it held as possibly committed, starts a new thread, and the next write commits", async () => {
    const writers = watchWriters();
    const path = join(tempDir(), "items.sqlite");
    const { store, lines, logged } = open(path);
    await store.put("a", bytes('{"v":1}'));
    expect(writers()).toHaveLength(1);

    const held = store.put("a", bytes('{"v":2}'));
    await writers()[0]!.terminate();
    const error = await held.then(
      () => undefined,
      (e: unknown) => e,
    );
    // Sent before the thread was stopped: it may or may not have committed, and says so.
    if (error !== undefined) {
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect((error as Error).message).toMatch(/writer thread stopped .*may have committed/);
    }
    expect(lines.join("\n")).toMatch(/store writer thread for .* stopped \(exit code 1\); writes fail \(503\) until it runs again/);

    // The replacement is started at once: the next write reaches it.
    const { etag } = await store.put("a", bytes('{"v":3}'));
    expect(text((await store.get("a"))?.body)).toBe('{"v":3}');
    expect((await store.get("a"))?.etag).toBe(etag);
    await logged(/running again/);
    expect(await store.ping()).toBe(true);
    expect(writers()).toHaveLength(2);
  });

  it("keeps restarting a writer that cannot open the file (ping false, writes 503), and recovers once it can", async () => {
    const writers = watchWriters();
    const dir = tempDir();
    const path = join(dir, "items.sqlite");
    const { store, logged } = open(path);
    await store.put("a", bytes('{"v":1}'));
    // The path becomes a directory: a new writer thread cannot open it (this thread's connection stays open).
    renameSync(path, join(dir, "moved.sqlite"));
    mkdirSync(path);
    await writers()[0]!.terminate();
    await logged(/stopped/);

    expect(await store.ping()).toBe(false);
    await expect(store.put("a", bytes('{"v":2}'))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.ping()).toBe(false);

    rmdirSync(path);
    renameSync(join(dir, "moved.sqlite"), path);
    await logged(/running again/);
    expect(await store.ping()).toBe(true);
    await store.put("a", bytes('{"v":3}'));
    expect(text((await store.get("a"))?.body)).toBe('{"v":3}');
  });
});

/** A tmpfs of `size` mounted on a new directory, or undefined where mounting is not allowed (not root). */
function smallDisk(size: string): string | undefined {
  const dir = tempDir();
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]).status === 0;
  if (!mounted) return undefined;
  registerCleanup(() => void spawnSync("umount", [dir]));
  return dir;
}

describe("a full disk", () => {
  it("writes are answered 503 (try again), nothing written, reads unaffected, and the next write after space is freed works", async (context) => {
    const disk = smallDisk("512k");
    if (disk === undefined) return context.skip("mounting a small tmpfs needs root");
    const lines: string[] = [];
    const origin = await start({ DATABASE_URL: join(disk!, "items.sqlite"), SEED_SAMPLE_ITEMS: "0" }, { log: (l) => lines.push(l) });
    const c = await RawConnection.open(origin.port);
    expect((await c.send(withBody("PUT", "/items/small", '{"v":1}'))).status).toBe(204);
    const big = JSON.stringify({ pad: "x".repeat(60_000) });
    const statuses: number[] = [];
    for (let i = 0; i < 12 && !statuses.includes(503); i++) statuses.push((await c.send(withBody("PUT", `/items/big${i}`, big))).status);
    const full = statuses.length - 1;
    expect(statuses.at(-1)).toBe(503);
    expect(statuses.slice(0, -1).every((s) => s === 204)).toBe(true);
    expect(lines.filter((l) => /has no room left \(database or disk is full\); nothing was written: free space on its filesystem/.test(l))).toHaveLength(1);
    expect(lines.join("\n")).not.toMatch(/internal error|\n\s+at /);
    expect((await c.send(get(`/items/big${full}`))).status).toBe(404); // refused, and nothing committed
    expect((await c.send(get("/items/small"))).status).toBe(200);
    expect((await c.send(get("/healthz"))).status).toBe(204); // reads are served

    // Room made on the filesystem: the same write goes through, no restart.
    expect(spawnSync("mount", ["-o", "remount,size=4m", disk!]).status).toBe(0);
    expect((await c.send(withBody("PUT", `/items/big${full}`, big))).status).toBe(204);
  });
});
