// Who runs the purger: two PostgresLeadership instances on one throwaway PostgreSQL database. Exactly one leads;
// when the leader's session ends (terminated backend, server restart) it steps down at once and the lock goes
// to whoever asks next; stop() releases it. Every onChange(true) also checks that no other instance leads at
// that moment. Waits are on events and on what PostgreSQL reports, each bounded; nothing sleeps to synchronise.
import { connect, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FixedLeadership, PostgresLeadership } from "../../src/origin/purge/leadership.ts";
import { startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

/** A leadership under test: its events, its log, and waits on both. */
interface Candidate {
  name: string;
  leadership: PostgresLeadership;
  events: boolean[];
  lines: string[];
  /** Resolves once `check()` holds, re-checked at every event and log line; rejects after `withinMs`. */
  until(check: () => boolean, what: string, withinMs?: number): Promise<void>;
}

const started: Candidate[] = [];
const overlaps: string[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.leadership.stop()));
  expect(overlaps).toEqual([]);
  overlaps.length = 0;
});

let nameCounter = 0;

function candidate(url: string): Candidate {
  const name = `leader-test-${process.pid}-${++nameCounter}`;
  const wakers = new Set<() => void>();
  const wake = () => {
    for (const w of wakers) w();
  };
  const c: Candidate = {
    name,
    events: [],
    lines: [],
    leadership: new PostgresLeadership({
      url,
      timeoutMs: 2000,
      applicationName: name,
      retryMs: 100,
      log: (line) => {
        c.lines.push(line);
        wake();
      },
    }),
    until(check, what, withinMs = 10_000) {
      if (check()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          wakers.delete(waker);
          reject(new Error(`${name}: not ${what} within ${withinMs} ms (events ${JSON.stringify(c.events)}, log ${JSON.stringify(c.lines)})`));
        }, withinMs);
        const waker = () => {
          if (!check()) return;
          clearTimeout(timer);
          wakers.delete(waker);
          resolve();
        };
        wakers.add(waker);
      });
    },
  };
  started.push(c);
  c.leadership.start((leading) => {
    c.events.push(leading);
    if (leading) {
      for (const other of started) if (other !== c && other.leadership.leading) overlaps.push(`${c.name} began leading while ${other.name} led`);
    }
    wake();
  });
  return c;
}

/** Resolves once `check` holds (polled on PostgreSQL's own view), or rejects after `withinMs`. */
async function eventually(check: () => Promise<boolean>, what: string, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not ${what} within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20)); // a poll interval, not a synchronisation
  }
}

/** Application names of the sessions that hold an advisory lock in `database`. */
async function lockHolders(database: string): Promise<string[]> {
  const out = await postgres.pg.sql(
    `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = '${database}') ORDER BY 1`,
  );
  return out === "" ? [] : out.split("\n");
}

const databaseOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** A loopback TCP relay to `url`'s server whose path can freeze: bytes stop both ways, nothing is closed (a vanished machine). */
async function freezableRelay(url: string): Promise<{ url: string; freeze(): void; close(): void }> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  let frozen = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on("data", (chunk) => {
        if (!frozen) to.write(chunk);
      });
      // Once frozen, not even a close gets through: the other side never hears of it.
      from.on("error", () => frozen || to.destroy());
      from.on("close", () => frozen || to.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const relayed = new URL(url);
  relayed.hostname = "127.0.0.1";
  relayed.port = String((server.address() as { port: number }).port);
  return {
    url: relayed.toString(),
    freeze: () => (frozen = true),
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

async function twoCandidates(): Promise<{ url: string; leader: Candidate; follower: Candidate }> {
  const url = await postgres.database();
  const a = candidate(url);
  const b = candidate(url);
  await Promise.race([a.until(() => a.leadership.leading, "leading"), b.until(() => b.leadership.leading, "leading")]);
  const [leader, follower] = a.leadership.leading ? [a, b] : [b, a];
  // The follower has asked and been told no (not merely not asked yet).
  await follower.until(() => follower.lines.some((l) => l.includes("another instance leads")), "told another instance leads");
  return { url, leader, follower };
}

describe("purge leadership on PostgreSQL", () => {
  it("exactly one of two instances leads; the other keeps asking without leading", async () => {
    const { url, leader, follower } = await twoCandidates();
    // The leader has since checked that its session holds the lock (pg_stat_activity shows a session's last query).
    await eventually(
      async () => (await postgres.pg.sql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${leader.name}' AND query LIKE '%pg_locks%'`)) === "1",
      "checked by the leader",
    );
    expect(leader.events).toEqual([true]);
    expect(leader.leadership.leading).toBe(true);
    expect(follower.leadership.leading).toBe(false);
    expect(follower.events).toEqual([]);
    expect(await lockHolders(databaseOf(url))).toEqual([leader.name]);
  }, 30_000);

  it("when the leader's backend is terminated, it steps down and the other takes over", async () => {
    const { url, leader, follower } = await twoCandidates();
    expect(await postgres.pg.terminate(`application_name = '${leader.name}'`)).toBe(1);
    await leader.until(() => !leader.leadership.leading, "stepped down", 5_000);
    expect(leader.events).toEqual([true, false]);
    await follower.until(() => follower.leadership.leading, "leading after the leader's session ended");
    expect(follower.events).toEqual([true]);
    expect(await lockHolders(databaseOf(url))).toEqual([follower.name]);
    // The old leader asks again on a new session, and is told no.
    await eventually(async () => (await postgres.pg.sql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = '${leader.name}'`)) === "1", "reconnected");
    expect(leader.leadership.leading).toBe(false);
  }, 30_000);

  it("a leader whose machine vanishes (its path frozen, nothing closed) loses the lock within seconds: the other takes over", async () => {
    const url = await postgres.database();
    const relay = await freezableRelay(url);
    try {
      const leader = candidate(relay.url);
      await leader.until(() => leader.leadership.leading, "leading");
      const follower = candidate(url);
      await follower.until(() => follower.lines.some((l) => l.includes("another instance leads")), "told another instance leads");
      relay.freeze();
      // The server hears nothing from the leader's session: it ends it once idle past idle_session_timeout.
      await follower.until(() => follower.leadership.leading, "leading after the leader's machine vanished", 20_000);
      expect(await lockHolders(databaseOf(url))).toEqual([follower.name]);
      await leader.until(() => !leader.leadership.leading, "stepped down", 10_000);
    } finally {
      relay.close();
    }
  }, 40_000);

  it("stop() steps down and releases the lock; the other takes over", async () => {
    const { url, leader, follower } = await twoCandidates();
    await leader.leadership.stop();
    expect(leader.events).toEqual([true, false]);
    expect(leader.leadership.leading).toBe(false);
    await follower.until(() => follower.leadership.leading, "leading after the leader stopped");
    expect(await lockHolders(databaseOf(url))).toEqual([follower.name]);
    await follower.leadership.stop();
    await eventually(async () => (await lockHolders(databaseOf(url))).length === 0, "released");
    expect(leader.events).toEqual([true, false]); // nothing after stop()
  }, 30_000);

  it("a server restart ends the leader's session: it steps down at once, and one instance leads again after", async () => {
    const { leader, follower } = await twoCandidates();
    await postgres.pg.restart();
    await leader.until(() => leader.events.length >= 2, "stepped down");
    expect(leader.events.slice(0, 2)).toEqual([true, false]);
    await Promise.race([leader.until(() => leader.leadership.leading, "leading"), follower.until(() => follower.leadership.leading, "leading")]);
    expect([leader, follower].filter((c) => c.leadership.leading)).toHaveLength(1);
  }, 60_000);
});

describe("fixed leadership (the embedded store: the process decides)", () => {
  it("leads from start() to stop() when told to, never otherwise", async () => {
    const events: boolean[] = [];
    const lead = new FixedLeadership(true);
    lead.start((leading) => events.push(leading));
    expect(lead.leading).toBe(true);
    await lead.stop();
    expect(lead.leading).toBe(false);
    const never = new FixedLeadership(false);
    never.start((leading) => events.push(leading));
    await never.stop();
    expect(never.leading).toBe(false);
    expect(events).toEqual([true, false]);
  });
});

describe("what an origin on PostgreSQL says it leads", () => {
  it("with purging off, its leader names the change log's pruning, not a purge it does not run", async () => {
    const lines: string[] = [];
    let led: () => void = () => {};
    const leading = new Promise<void>((resolve) => (led = resolve));
    await startOnPostgres(await postgres.database(), {}, {
      log: (line) => {
        lines.push(line);
        if (line.includes("this instance leads")) led();
      },
    });
    await leading;
    expect(lines.filter((l) => l.includes("leads"))).toEqual([expect.stringMatching(/^leadership: this instance leads the change log's pruning \(advisory lock \d+\)$/)]);
  }, 30_000);
});
