// `npm run feed:install -- --table NAME [--id-column id] [--grant-to ROLE] [--print]`: installs what feeds the
// changes of your own items table to every origin instance (the change log, its function and the table's
// triggers), in one transaction, on the database DATABASE_URL names. Run it as the table's owner; run it again
// any time (idempotent). --grant-to gives the origin's role (when it is not the owner) what it needs: read the
// table and the log, mark changes purged and prune the log. With --print it only prints the SQL, to apply by
// hand or through your migrations.

import { parseArgs } from "node:util";
import postgres from "postgres";
import { redact } from "../src/origin/config/database-url.ts";
import { installScript, quoteName } from "../src/origin/store/postgres/schema.ts";

const USAGE = "usage: npm run feed:install -- --table NAME [--id-column COLUMN] [--grant-to ROLE] [--print]   (DATABASE_URL=postgres://… in the environment)";

let values: { table?: string; "id-column"?: string; "grant-to"?: string; print?: boolean; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      table: { type: "string" },
      "id-column": { type: "string", default: "id" },
      "grant-to": { type: "string" },
      print: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`);
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (values.table === undefined || values.table.trim() === "") fail(`--table is required (the table whose rows are the items, e.g. public.products)\n${USAGE}`);
const table = quoteName(values.table.trim());
const idColumn = values["id-column"]!.trim();
const script = installScript(table, idColumn, values["grant-to"]?.trim() || undefined);
if (values.print) {
  process.stdout.write(script);
  process.exit(0);
}
const url = process.env.DATABASE_URL;
if (url === undefined || !/^postgres(ql)?:\/\//.test(url)) fail(`set DATABASE_URL to the PostgreSQL database that holds ${values.table} (postgres://user:password@host:5432/db), or use --print`);
const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
try {
  await sql.unsafe(script);
  process.stdout.write(`feed:install: changes of ${table} (id column ${idColumn}) now reach every origin instance through the change log in ${redact(url)}\n`);
} catch (error) {
  fail(`cannot install on ${redact(url)}: ${(error as Error).message}${(error as { code?: string }).code === "42501" ? " (run it as the table's owner)" : ""}`);
} finally {
  await sql.end({ timeout: 2 });
}

function fail(message: string): never {
  process.stderr.write(`feed:install: ${message}\n`);
  process.exit(2);
}
