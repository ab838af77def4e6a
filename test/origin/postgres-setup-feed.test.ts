// What feed:install installs on the user's table and what the origin checks of it at start, on a real
// server: the trigger function cannot be turned against its owner or hidden from by a writer's temporary
// objects; the triggers record ITEMS_ID_COLUMN, fire in logical-replication apply workers, and feed every
// table a view reads (through views of views); a length-limited id column does not truncate the requested
// id; and a table is named as in SQL (mixed case, quoted, schema-qualified) consistently by the origin, its
// hints and feed:install, whose --grant-to gives USAGE on the schemas too. Every refusal of feed:install
// exits 2 with the fix in its message and leaves the database as it was.
import { createServer, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { preparePostgres, type UserTableSpec } from "../../src/origin/store/postgres/prepare.ts";
import { UserTableStore } from "../../src/origin/store/postgres/user-table-store.ts";
import { feedInstall, registerCleanup, startOnPostgres, usePostgres } from "./pg-harness.ts";

const postgres = usePostgres();

const dbOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
const options = (url: string) => ({ url, display: "db", poolSize: 1, timeoutMs: 5000, applicationName: "setup-test" });
const spec = (table: string, idColumn = "id", jsonColumn?: string): UserTableSpec => ({ table, idColumn, jsonColumn, versionColumn: undefined });

/** The one problem preparePostgres refuses `spec` with (fails the test when it is accepted). */
async function refusal(url: string, s: UserTableSpec): Promise<{ variable: string; message: string }> {
  const error = await preparePostgres(options(url), s).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConfigError)) throw new Error(`${s.table} was not refused: ${String(error)}`);
  expect(error.problems).toHaveLength(1);
  return error.problems[0]!;
}

async function role(name: string, db: string): Promise<void> {
  await postgres.pg.sql(`DO $$ BEGIN CREATE ROLE ${name} LOGIN PASSWORD '${name}-pw'; EXCEPTION WHEN duplicate_object THEN NULL; END $$`, db);
}
const as = (url: string, name: string) => url.replace("postgres://postgres@", `postgres://${name}:${name}-pw@`);

/** Drop the triggers feed:install put on `table`: it is served no more (one deployment per database). */
function unfeed(db: string, table: string): Promise<string> {
  return postgres.pg.sql(`DROP TRIGGER slim_edge_record_change ON ${table}; DROP TRIGGER slim_edge_record_change_truncate ON ${table};`, db);
}

/** The arguments of the `npm run feed:install -- …` command a refusal names (plain words and '…' only). */
function commandIn(message: string): string[] {
  const command = /`npm run feed:install -- ([^`]*)`/.exec(message)?.[1];
  if (command === undefined) throw new Error(`no feed:install command in: ${message}`);
  return [...command.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

describe("the change log's trigger function", () => {
  it("writes the real log whatever a writer puts in pg_temp, runs nothing as its owner, and cannot be attached by others", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql(`CREATE TABLE products (sku text PRIMARY KEY, doc jsonb); INSERT INTO products VALUES ('A-1', '{}');`, db);
    expect(await feedInstall(url, ["--table", "products", "--id-column", "sku"])).toMatchObject({ code: 0 });
    await role("setup_writer", db);
    await postgres.pg.sql("GRANT SELECT, UPDATE ON products TO setup_writer", db);
    // A writer of the table (no rights on the log, no CREATE anywhere) shadows the log with a temporary
    // table whose trigger would run as the function's owner.
    await postgres.pg.sql(
      `SET ROLE setup_writer;
       CREATE TEMP TABLE slim_edge_changes (seq bigserial, xid xid8 DEFAULT pg_current_xact_id(), item_id text, changed_at timestamptz DEFAULT now(), purged boolean DEFAULT false);
       CREATE FUNCTION pg_temp.evil() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN CREATE TABLE public.pwned AS SELECT current_user AS who; RETURN NULL; END $f$;
       CREATE TRIGGER evil AFTER INSERT ON pg_temp.slim_edge_changes FOR EACH ROW EXECUTE FUNCTION pg_temp.evil();
       UPDATE products SET doc = '{"v": 2}' WHERE sku = 'A-1';`,
      db,
    );
    expect(await postgres.pg.sql("SELECT to_regclass('public.pwned') IS NULL", db)).toBe("t");
    expect(await postgres.pg.sql("SELECT string_agg(item_id, ',') FROM public.slim_edge_changes", db)).toBe("A-1");
    // Nor can anyone attach the function to a table of theirs to write the log.
    await expect(
      postgres.pg.sql("SET ROLE setup_writer; CREATE TEMP TABLE mine (id text); CREATE TRIGGER t AFTER INSERT ON mine FOR EACH ROW EXECUTE FUNCTION public.slim_edge_record_change('id');", db),
    ).rejects.toThrow(/permission denied for function (public\.)?slim_edge_record_change/);
  });

  it("an install by an earlier version is refused at start, and feed:install replaces it", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE TABLE products (sku text PRIMARY KEY, doc jsonb)", db);
    expect(await feedInstall(url, ["--table", "products", "--id-column", "sku"])).toMatchObject({ code: 0 });
    // What earlier versions installed: the search_path of the installing session, pg_temp first.
    await postgres.pg.sql(
      `CREATE OR REPLACE FUNCTION public.slim_edge_record_change() RETURNS trigger LANGUAGE plpgsql
         SECURITY DEFINER SET search_path FROM CURRENT AS $f$ BEGIN INSERT INTO slim_edge_changes (item_id) VALUES ('x'); RETURN NULL; END $f$`,
      db,
    );
    const old = await refusal(url, spec("products", "sku"));
    expect(old).toEqual({ variable: "ITEMS_TABLE", message: expect.stringMatching(/older version of "public"."slim_edge_record_change" .* `npm run feed:install -- --table public.products --id-column sku`/) });
    expect(await feedInstall(url, commandIn(old.message))).toMatchObject({ code: 0 });
    expect(await postgres.pg.sql("SELECT array_to_string(proconfig, ';') FROM pg_proc WHERE proname = 'slim_edge_record_change'", db)).toBe("search_path=pg_catalog, pg_temp");
    await preparePostgres(options(url), spec("products", "sku"));

    // An earlier body with this version's settings: named as such, and replaced the same way.
    await postgres.pg.sql(
      `CREATE OR REPLACE FUNCTION public.slim_edge_record_change() RETURNS trigger LANGUAGE plpgsql
         SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$ BEGIN RETURN NULL; END $f$`,
      db,
    );
    const body = await refusal(url, spec("products", "sku"));
    expect(body.message).toMatch(/older version of "public"."slim_edge_record_change" \(owned by postgres; its body is not this version's, which records item ids only/);
    expect(await feedInstall(url, commandIn(body.message))).toMatchObject({ code: 0 });
    await preparePostgres(options(url), spec("products", "sku"));
  });
});

describe("the triggers feed:install installs and the origin checks", () => {
  it("refuses an id column the table does not have, and a trigger that records another column than ITEMS_ID_COLUMN", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE TABLE products (id int, sku text PRIMARY KEY, doc jsonb)", db);
    expect(await feedInstall(url, ["--table", "products", "--id-column", "code"])).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: public.products has no column 'code'; its columns are id, sku, doc/),
    });
    expect(await postgres.pg.sql("SELECT to_regclass('slim_edge_changes') IS NULL", db)).toBe("t"); // nothing installed
    expect(await feedInstall(url, ["--table", "products"])).toMatchObject({ code: 0 }); // --id-column id
    const wrong = await refusal(url, spec("products", "sku"));
    expect(wrong.variable).toBe("ITEMS_ID_COLUMN");
    expect(wrong.message).toMatch(/the trigger on public.products records the column 'id', not ITEMS_ID_COLUMN 'sku'.*`npm run feed:install -- --table public.products --id-column sku`/);
    expect(await feedInstall(url, commandIn(wrong.message))).toMatchObject({ code: 0 });
    expect((await preparePostgres(options(url), spec("products", "sku")))!.idColumn).toBe("sku");
  });

  it("fire in logical-replication apply workers too (ENABLE ALWAYS), and a trigger that does not is refused", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE TABLE products (id text PRIMARY KEY, doc jsonb)", db);
    expect(await feedInstall(url, ["--table", "products"])).toMatchObject({ code: 0 });
    // What an apply worker runs as: session_replication_role = replica.
    await postgres.pg.sql("SET session_replication_role = replica; INSERT INTO products VALUES ('replicated', '{}');", db);
    expect(await postgres.pg.sql("SELECT string_agg(item_id, ',') FROM slim_edge_changes", db)).toBe("replicated");
    await postgres.pg.sql("ALTER TABLE products ENABLE TRIGGER slim_edge_record_change", db);
    expect(await refusal(url, spec("products"))).toEqual({ variable: "ITEMS_TABLE", message: expect.stringMatching(/fires only in ordinary sessions \(ENABLE ORIGIN\).*npm run feed:install/) });
  });

  it("a view is fed only when every table it reads, through views of views, is; one over a materialized view is refused", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql(
      `CREATE TABLE base (id text PRIMARY KEY, doc jsonb); CREATE TABLE other (id text PRIMARY KEY);
       CREATE VIEW inner_v AS SELECT * FROM base; CREATE VIEW outer_v AS SELECT * FROM inner_v;
       CREATE MATERIALIZED VIEW mv AS SELECT * FROM base; CREATE VIEW over_mv AS SELECT * FROM mv;`,
      db,
    );
    expect(await feedInstall(url, ["--table", "other"])).toMatchObject({ code: 0 }); // the log, not base's triggers
    expect((await refusal(url, spec("outer_v"))).message).toMatch(/^no trigger feeds changes of public.base \(a table the view public.outer_v reads\)/);
    expect((await refusal(url, spec("over_mv"))).message).toMatch(/^the view public.over_mv reads public.mv, a materialized view/);
    expect(await feedInstall(url, ["--table", "outer_v"])).toEqual({ code: 2, out: expect.stringMatching(/public.outer_v is a view: run this for each table it reads \(public.base\)/) });
    expect(await feedInstall(url, ["--table", "base"])).toMatchObject({ code: 0 });
    await unfeed(db, "other"); // it only brought the log
    expect((await preparePostgres(options(url), spec("outer_v")))!.table).toBe("public.outer_v");
    expect((await refusal(url, spec("over_mv"))).message).toMatch(/materialized view/);
  });
});

describe("ids and names", () => {
  it("a varchar(8) id column: a longer id is no item (it is not cut down to one that exists)", async () => {
    const url = await postgres.database();
    await postgres.pg.sql(`CREATE TABLE products (sku varchar(8) PRIMARY KEY, doc jsonb); INSERT INTO products VALUES ('abcdefgh', '{"n": 1}');`, dbOf(url));
    expect(await feedInstall(url, ["--table", "products", "--id-column", "sku"])).toMatchObject({ code: 0 });
    const shape = (await preparePostgres(options(url), spec("products", "sku", "doc")))!;
    expect(shape.idType).toBe("character varying");
    const store = new UserTableStore(options(url), shape);
    registerCleanup(() => store.close());
    expect(Buffer.from((await store.get("abcdefgh"))!.body).toString()).toBe('{"n":1}');
    expect(await store.get("abcdefgh-anything")).toBeUndefined();
  });

  it("mixed-case and quoted names are read as in SQL by the origin, its hints and feed:install", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql(
      `CREATE TABLE "MyItems" (id text PRIMARY KEY, doc jsonb); INSERT INTO "MyItems" VALUES ('a', '{"t": "MyItems"}');
       CREATE SCHEMA "Shop"; CREATE TABLE "Shop"."Items" (id text PRIMARY KEY, doc jsonb); INSERT INTO "Shop"."Items" VALUES ('a', '{"t": "Shop"}');
       CREATE TABLE products (id text PRIMARY KEY, doc jsonb); INSERT INTO products VALUES ('a', '{"t": "products"}');`,
      db,
    );
    // One after the other (one deployment per database): each served alone, the one before unfed.
    for (const [table, name, body, before] of [
      ['"MyItems"', 'public."MyItems"', '{"t":"MyItems"}', undefined],
      ['"Shop"."Items"', '"Shop"."Items"', '{"t":"Shop"}', '"MyItems"'],
    ] as const) {
      if (before !== undefined) await unfeed(db, before);
      expect(await feedInstall(url, ["--table", table])).toMatchObject({ code: 0, out: expect.stringContaining(`changes of ${name}`) });
      const origin = await startOnPostgres(url, { ITEMS_TABLE: table, ITEMS_JSON_COLUMN: "doc" });
      const res = await fetch(`${origin.url}/items/a`);
      expect([res.status, await res.text()]).toEqual([200, body]);
    }
    expect((await refusal(url, spec("MyItems"))).message).toMatch(/no table or view 'MyItems' .*did you mean ITEMS_TABLE='public."MyItems"'/);
    // Products is products, as in SQL; the command the refusal names installs on it.
    const unfed = await refusal(url, spec("Products"));
    expect(unfed.message).toMatch(/no trigger feeds changes of public.products/);
    expect(await feedInstall(url, commandIn(unfed.message))).toMatchObject({ code: 0 });
    await unfeed(db, '"Shop"."Items"');
    expect((await preparePostgres(options(url), spec("Products")))!.table).toBe("public.products");
  });

  it("a role that may not read the table or the log is refused naming the GRANT; --grant-to grants USAGE on the schemas too", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql(
      `CREATE SCHEMA "Shop"; CREATE TABLE "Shop"."Items" (id text PRIMARY KEY, doc jsonb); INSERT INTO "Shop"."Items" VALUES ('a', '{}');
       REVOKE ALL ON SCHEMA public FROM PUBLIC;`,
      db,
    );
    await role("setup_reader", db);
    expect(await feedInstall(url, ["--table", '"Shop"."Items"'])).toMatchObject({ code: 0 });
    const reader = as(url, "setup_reader");
    expect(await refusal(reader, spec('"Shop"."Items"'))).toEqual({ variable: "ITEMS_TABLE", message: expect.stringMatching(/`GRANT USAGE ON SCHEMA "Shop" TO "setup_reader";`/) });
    await postgres.pg.sql(`GRANT USAGE ON SCHEMA "Shop" TO setup_reader; GRANT USAGE ON SCHEMA public TO setup_reader;`, db);
    const lacking = await refusal(reader, spec('"Shop"."Items"'));
    expect(lacking.variable).toBe("DATABASE_URL");
    expect(lacking.message).toMatch(
      /`GRANT SELECT ON "Shop"."Items" TO "setup_reader"; GRANT SELECT, UPDATE, DELETE ON "public"."slim_edge_changes" TO "setup_reader"; GRANT SELECT, UPDATE ON "public"."slim_edge_feed" TO "setup_reader";`/,
    );
    await postgres.pg.sql(`REVOKE USAGE ON SCHEMA "Shop" FROM setup_reader; REVOKE USAGE ON SCHEMA public FROM setup_reader;`, db);
    expect(await feedInstall(url, ["--table", '"Shop"."Items"', "--grant-to", "setup_reader"])).toMatchObject({ code: 0 });
    const origin = await startOnPostgres(reader, { ITEMS_TABLE: '"Shop"."Items"' });
    expect((await fetch(`${origin.url}/items/a`)).status).toBe(200);
  });
});

describe("feed:install's refusals: exit 2, a message that names the fix, and nothing installed or changed", () => {
  const triggersOn = (db: string, table: string) => postgres.pg.sql(`SELECT count(*) FROM pg_trigger WHERE tgrelid = '${table}'::regclass AND NOT tgisinternal`, db);
  const logInstalled = (db: string) => postgres.pg.sql("SELECT to_regclass('slim_edge_changes') IS NOT NULL", db);

  it("a name that is not one, a table that is not there (with the name meant), a materialized view", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql(`CREATE TABLE "Products" (id text PRIMARY KEY, doc jsonb); CREATE MATERIALIZED VIEW snapshot AS SELECT * FROM "Products";`, db);
    expect(await feedInstall(url, ["--table", "a.b.c.d"])).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: 'a\.b\.c\.d' is not a table name \(.*\); write it as in SQL/) });
    const unknown = await feedInstall(url, ["--table", "Products"]);
    expect(unknown).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: no table 'Products' in this database .*; did you mean --table 'public\."Products"' \(unquoted names are read in lower case/) });
    expect(await feedInstall(url, ["--table", "snapshot"])).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: public\.snapshot is not a table \(a materialized view changes only on REFRESH.*install on the table it is built from/) });
    expect(await logInstalled(db)).toBe("f");
    // The name the refusal offers is the one that installs.
    const meant = /did you mean --table '([^']+)'/.exec(unknown.out)![1]!;
    expect(await feedInstall(url, ["--table", meant])).toMatchObject({ code: 0, out: expect.stringMatching(/changes of public\."Products"/) });
    expect(await triggersOn(db, 'public."Products"')).toBe("2");
  });

  it("--schema other than the one the change log is in: nothing installed on the second table", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE TABLE first_items (id text PRIMARY KEY); CREATE TABLE second_items (id text PRIMARY KEY); CREATE SCHEMA feed;", db);
    expect(await feedInstall(url, ["--table", "first_items"])).toMatchObject({ code: 0 });
    expect(await feedInstall(url, ["--table", "second_items", "--schema", "feed"])).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: the change log is already in schema public \("public"\."slim_edge_changes"\), where the origin finds it: there is one per database; drop --schema or pass --schema public/),
    });
    expect(await triggersOn(db, "second_items")).toBe("0");
    expect(await postgres.pg.sql("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'feed'", db)).toBe("0");
    expect(await feedInstall(url, ["--table", "second_items", "--schema", "public"])).toMatchObject({ code: 0 });
    expect(await triggersOn(db, "second_items")).toBe("2");
  });

  it("a change log in a schema off the installer's search_path: refused, not a second log beside it; --schema installs beside it", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE SCHEMA feed; CREATE TABLE first_items (id text PRIMARY KEY); CREATE TABLE second_items (id text PRIMARY KEY);", db);
    expect(await feedInstall(url, ["--table", "first_items", "--schema", "feed"])).toMatchObject({ code: 0 });
    expect(await feedInstall(url, ["--table", "second_items"])).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: the change log is already in schema feed \("feed"\."slim_edge_changes"\), which this role's search_path does not show: .*pass --schema feed/),
    });
    expect(await postgres.pg.sql("SELECT string_agg(n.nspname, ',') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'slim_edge_changes'", db)).toBe("feed");
    expect(await triggersOn(db, "second_items")).toBe("0");
    expect(await feedInstall(url, ["--table", "second_items", "--schema", "feed"])).toMatchObject({ code: 0, out: expect.stringMatching(/"feed"\."slim_edge_changes"/) });
    await postgres.pg.sql("INSERT INTO second_items VALUES ('s-1')", db);
    expect(await postgres.pg.sql("SELECT string_agg(item_id, ',') FROM feed.slim_edge_changes", db)).toBe("s-1");

    // A table's owner without USAGE on that schema is told who may grant it, not to run this as the owner.
    await role("setup_hidden", db);
    await postgres.pg.sql("CREATE TABLE third_items (id text PRIMARY KEY); ALTER TABLE third_items OWNER TO setup_hidden; GRANT CREATE ON SCHEMA public TO setup_hidden;", db);
    expect(await feedInstall(as(url, "setup_hidden"), ["--table", "third_items", "--schema", "feed"])).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: the change log is in schema feed, on which this role has no USAGE: as postgres, who owns it, run `GRANT USAGE ON SCHEMA "feed" TO "setup_hidden";`, then run this again/),
    });
    expect(await triggersOn(db, "third_items")).toBe("0");

    // The origin's role does not see that schema either: refused with what this role itself can run.
    const unseen = await refusal(url, spec("second_items"));
    expect(unseen).toEqual({
      variable: "DATABASE_URL",
      message: expect.stringMatching(/^the change log "feed"\."slim_edge_changes" is not on the search_path of role postgres: as postgres itself \(or a superuser\), run `(ALTER ROLE "postgres" IN DATABASE "[^"]+" SET search_path = "\$user", public, "feed";)` and start again/),
    });
    await postgres.pg.sql(/`(ALTER ROLE [^`]+)`/.exec(unseen.message)![1]!, db);
    await unfeed(db, "first_items");
    expect((await preparePostgres(options(url), spec("second_items")))!.table).toBe("public.second_items");
  });

  it("a table's owner who may not use another role's function, or replace its older version, is told what that role must run", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE TABLE first_items (id text PRIMARY KEY); CREATE TABLE their_items (id text PRIMARY KEY);", db);
    await role("setup_owner", db);
    await postgres.pg.sql("ALTER TABLE their_items OWNER TO setup_owner", db);
    expect(await feedInstall(url, ["--table", "first_items"])).toMatchObject({ code: 0 }); // the function belongs to postgres
    const owner = as(url, "setup_owner");

    const denied = await feedInstall(owner, ["--table", "their_items"]);
    expect(denied).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: "public"\."slim_edge_record_change"\(\) belongs to postgres, and this role may not attach it to a table: as postgres, run `GRANT EXECUTE ON FUNCTION "public"\."slim_edge_record_change"\(\) TO "setup_owner";`/),
    });
    expect(await triggersOn(db, "their_items")).toBe("0");
    await postgres.pg.sql(/`(GRANT EXECUTE [^`]+)`/.exec(denied.out)![1]!, db);
    expect(await feedInstall(owner, ["--table", "their_items"])).toMatchObject({ code: 0 });
    expect(await triggersOn(db, "their_items")).toBe("2");

    // --grant-to for the origin's role: what is on the log only the log's owner can grant.
    expect(await feedInstall(owner, ["--table", "their_items", "--grant-to", "setup_origin"])).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: --grant-to setup_origin: there is no such role; create it first/),
    });
    await role("setup_origin", db);
    const ungranted = await feedInstall(owner, ["--table", "their_items", "--grant-to", "setup_origin"]);
    expect(ungranted).toEqual({
      code: 2,
      out: expect.stringMatching(
        /^feed:install: --grant-to setup_origin: only their owners can grant what it needs on the change log: as postgres, who owns the change log "public"\."slim_edge_changes", run `GRANT SELECT, UPDATE, DELETE ON "public"\."slim_edge_changes" TO "setup_origin"; GRANT SELECT, UPDATE ON "public"\."slim_edge_feed" TO "setup_origin";`; then run this again/,
      ),
    });
    expect(await postgres.pg.sql("SELECT has_table_privilege('setup_origin', 'their_items', 'SELECT')", db)).toBe("f");
    await postgres.pg.sql(/`(GRANT [^`]+)`/.exec(ungranted.out)![1]!, db);
    expect(await feedInstall(owner, ["--table", "their_items", "--grant-to", "setup_origin"])).toMatchObject({ code: 0 });
    await postgres.pg.sql("INSERT INTO their_items VALUES ('t-1')", db);
    await unfeed(db, "first_items"); // it only brought the log
    const origin = await startOnPostgres(as(url, "setup_origin"), { ITEMS_TABLE: "their_items" });
    expect([(await fetch(`${origin.url}/items/t-1`)).status, (await fetch(`${origin.url}/items/t-2`)).status]).toEqual([200, 404]);

    // An earlier version's function (its search_path would let a writer run code as its owner).
    await postgres.pg.sql(
      `CREATE OR REPLACE FUNCTION public.slim_edge_record_change() RETURNS trigger LANGUAGE plpgsql
         SECURITY DEFINER SET search_path FROM CURRENT AS $f$ BEGIN RETURN NULL; END $f$`,
      db,
    );
    const proconfig = "SELECT array_to_string(proconfig, ';') FROM pg_proc WHERE proname = 'slim_edge_record_change'";
    const old = await postgres.pg.sql(proconfig, db);
    expect(await feedInstall(owner, ["--table", "their_items"])).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: "public"\."slim_edge_record_change"\(\) is an older version .* and belongs to postgres: run this once as postgres/),
    });
    expect(await postgres.pg.sql(proconfig, db)).toBe(old);
    expect(await feedInstall(url, ["--table", "their_items"])).toMatchObject({ code: 0 }); // as postgres
    expect(await postgres.pg.sql(proconfig, db)).toBe("search_path=pg_catalog, pg_temp");
  });

  it("a role that owns nothing, a wrong password, a database that is not there, a server that is not there: the password never shown", async () => {
    const url = await postgres.database();
    const db = dbOf(url);
    await postgres.pg.sql("CREATE TABLE products (id text PRIMARY KEY)", db);
    await role("setup_stranger", db);
    const stranger = await feedInstall(as(url, "setup_stranger"), ["--table", "products"]);
    expect(stranger).toEqual({
      code: 2,
      out: expect.stringMatching(/^feed:install: cannot install on postgres:\/\/setup_stranger:\*\*\*@.*: permission denied for schema public \(run it as the table's owner; .*`GRANT CREATE ON SCHEMA "public" TO …`\)/),
    });
    expect(await logInstalled(db)).toBe("f");

    const wrongPassword = url.replace("postgres://postgres@", "postgres://setup_stranger:not-the-password@");
    const login = await feedInstall(wrongPassword, ["--table", "products"]);
    expect(login).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: PostgreSQL at postgres:\/\/setup_stranger:\*\*\*@.* refused the login .*fix the user and password in DATABASE_URL/) });
    expect(await feedInstall(`${url}_missing`, ["--table", "products"])).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: database ".*_missing" does not exist at .*; create it \(createdb\)/) });

    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const nowhere = await feedInstall(`postgres://someone:s3cret-pw@127.0.0.1:${closed}/items`, ["--table", "products"]);
    expect(nowhere).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: cannot reach PostgreSQL at postgres:\/\/someone:\*\*\*@127\.0\.0\.1:\d+\/items .*is it running/) });
    // Passwords with a reserved character left unencoded: `@` still logs in (or not) and is hidden whole;
    // `/` makes the URL unparseable, which is said without the password.
    const withAt = await feedInstall(url.replace("postgres://postgres@", "postgres://setup_stranger:not@the-password@"), ["--table", "products"]);
    expect(withAt).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: PostgreSQL at postgres:\/\/setup_stranger:\*\*\*@127\.0\.0\.1:\d+\/\S+ refused the login/) });
    const withSlash = await feedInstall(url.replace("postgres://postgres@", "postgres://setup_stranger:not/the-password@"), ["--table", "products"]);
    expect(withSlash).toEqual({ code: 2, out: expect.stringMatching(/^feed:install: DATABASE_URL "postgres:\/\/setup_stranger:\*\*\*@.*" is not a valid URL; .*percent-encoded/) });
    for (const out of [stranger.out, login.out, nowhere.out, withAt.out, withSlash.out]) expect(out).not.toMatch(/-pw|the-password/);
  });
});
