// The origin's own tables at start, and how a failing first connection ends a start, on a real server: an
// owner creates the tables once and a role with only DML rights then starts (nothing is created or replaced
// at every start, only what is missing); an older, unsafe trigger function is replaced by its owner and
// refused to anyone else; the triggers fire in replication apply workers; a server that is not there or not
// ready (unreachable, starting up, out of connections) is a StoreUnavailableError, to be retried, while a
// login or database that is wrong is a refusal.
import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { StoreUnavailableError } from "../../src/origin/store/item-store.ts";
import { preparePostgres } from "../../src/origin/store/postgres/prepare.ts";
import { startOrigin } from "../../src/origin/start-origin.ts";
import { testConfig } from "./harness.ts";
import { registerCleanup, startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

const dbOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
const options = (url: string) => ({ url, display: "db", poolSize: 1, timeoutMs: 2000, applicationName: "setup-test" });
const failure = (url: string) =>
  preparePostgres(options(url), undefined).then(
    () => undefined,
    (e: unknown) => e,
  );

async function role(name: string, db: string, grants: string): Promise<string> {
  await postgres.pg.sql(`DO $$ BEGIN CREATE ROLE ${name} LOGIN PASSWORD '${name}-pw'; EXCEPTION WHEN duplicate_object THEN NULL; END $$; ${grants}`, db);
  return postgres.pg.urlFor(db).replace("postgres://postgres@", `postgres://${name}:${name}-pw@`);
}

const OWNED_GRANTS = (name: string) =>
  `GRANT SELECT, INSERT, UPDATE ON slim_edge_items TO ${name}; GRANT SELECT, UPDATE, DELETE ON slim_edge_changes TO ${name}; GRANT SELECT, UPDATE ON slim_edge_feed TO ${name};`;

/** A server that answers every connection with one error (as PostgreSQL does while it starts up). */
async function answeringWith(code: string, message: string): Promise<string> {
  const field = (type: string, value: string) => Buffer.concat([Buffer.from(type), Buffer.from(value), Buffer.from([0])]);
  const fields = Buffer.concat([field("S", "FATAL"), field("V", "FATAL"), field("C", code), field("M", message), Buffer.from([0])]);
  const length = Buffer.alloc(4);
  length.writeInt32BE(fields.length + 4);
  const reply = Buffer.concat([Buffer.from("E"), length, fields]);
  const server: Server = createServer((socket) => socket.once("data", () => socket.end(reply)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  registerCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return `postgres://postgres@127.0.0.1:${port}/items`;
}

describe("the origin's own tables at start", () => {
  it("created once by an owner, then a role with only DML rights starts, and its writes reach the change log", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await preparePostgres(options(url), undefined);
    const dml = await role("setup_dml", db, OWNED_GRANTS("setup_dml"));
    await preparePostgres(options(dml), undefined);
    const origin = await startOnPostgres(dml);
    expect((await fetch(`${origin.url}/items/x`, { method: "PUT", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(204);
    expect(await postgres.pg.sql("SELECT string_agg(item_id, ',') FROM slim_edge_changes", db)).toBe("x");
    // Written the way they fire in logical-replication apply workers too.
    expect(await postgres.pg.sql("SELECT string_agg(tgenabled::text, '') FROM pg_trigger WHERE tgrelid = 'slim_edge_items'::regclass", db)).toBe("AA");
  });

  it("instances starting together on an empty database all start: one creates the tables, the others find them", async () => {
    const url = await postgres.database();
    // Each may look between two statements while another's creation commits (the table not there yet, its
    // triggers already): none may take the table another instance just created for another deployment's.
    // (A stress of that window, not a way to open it at will.)
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => preparePostgres(options(url), undefined)));
    expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "started"))).toEqual(Array(6).fill("started"));
  });

  it("a role without a privilege it needs is refused naming the GRANT", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await preparePostgres(options(url), undefined);
    const partial = await role("setup_partial", db, "GRANT SELECT, INSERT, UPDATE ON slim_edge_items TO setup_partial; GRANT SELECT ON slim_edge_changes, slim_edge_feed TO setup_partial;");
    const error = await failure(partial);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      {
        variable: "DATABASE_URL",
        message: expect.stringContaining('`GRANT UPDATE, DELETE ON "public"."slim_edge_changes" TO "setup_partial"; GRANT UPDATE ON "public"."slim_edge_feed" TO "setup_partial";`'),
      },
    ]);
  });

  it("an older, unsafe trigger function is replaced at start by its owner, and refused to a role that cannot replace it", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await preparePostgres(options(url), undefined);
    const dml = await role("setup_dml2", db, OWNED_GRANTS("setup_dml2"));
    await postgres.pg.sql(
      `CREATE OR REPLACE FUNCTION public.slim_edge_record_change() RETURNS trigger LANGUAGE plpgsql
         SECURITY DEFINER SET search_path FROM CURRENT AS $f$ BEGIN INSERT INTO slim_edge_changes (item_id) VALUES ('x'); RETURN NULL; END $f$`,
      db,
    );
    const error = await failure(dml);
    expect((error as ConfigError).problems).toEqual([
      { variable: "DATABASE_URL", message: expect.stringMatching(/cannot create a new version of "public"."slim_edge_record_change" .*start the origin once as postgres/) },
    ]);
    await preparePostgres(options(url), undefined);
    expect(await postgres.pg.sql("SELECT array_to_string(proconfig, ';') FROM pg_proc WHERE proname = 'slim_edge_record_change'", db)).toBe("search_path=pg_catalog, pg_temp");
    await preparePostgres(options(dml), undefined);
  });
});

describe("a first connection that fails", () => {
  it.each([
    ["unreachable", async () => "postgres://postgres@127.0.0.1:1/items", /^cannot reach PostgreSQL at db \(.*ECONNREFUSED.*\); is it running/],
    // This server has ssl = off: the handshake ends like a dropped connection, so TLS is named as a suspect.
    [
      "TLS required, and the server does not accept it",
      async () => `${await postgres.database()}?sslmode=require`,
      /^cannot reach PostgreSQL at db \(.*TLS.*\) over TLS; if the server does not accept TLS, remove sslmode from DATABASE_URL or turn ssl on at the server, else is it running/,
    ],
    ["starting up (57P03)", () => answeringWith("57P03", "the database system is starting up"), /^PostgreSQL at db does not accept connections yet \(the database system is starting up\)/],
    [
      "out of connections (53300)",
      async () => role("setup_full", "postgres", "ALTER ROLE setup_full CONNECTION LIMIT 0"),
      /^PostgreSQL at db has no connection free \(too many connections for role "setup_full"\): .*DATABASE_POOL_SIZE.*ORIGIN_PROCESSES.*max_connections/,
    ],
  ])("%s: the store is unavailable, not the configuration refused (the start is retried)", async (_, url, message) => {
    const error = await failure(await url());
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(message);
    // And so through the origin's start, not as a ConfigError (exit 2, never restarted).
    const started = await startOrigin({ config: testConfig({ DATABASE_URL: await url() }), log: () => {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(started).toBeInstanceOf(StoreUnavailableError);
  });

  it("a login refused is a refusal naming DATABASE_URL", async () => {
    const url = await role("setup_login", "postgres", "");
    const error = await failure(url.replace("setup_login-pw", "wrong"));
    expect((error as ConfigError).problems).toEqual([{ variable: "DATABASE_URL", message: expect.stringMatching(/refused the login .*fix the user and password/) }]);
  });
});
