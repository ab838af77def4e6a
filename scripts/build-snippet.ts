// `npm run build:snippet [-- --env NAME] [--var NAME:VALUE ...] [--outfile PATH] [--bake-origin-token]`: the
// Cloudflare Snippet as one ES module (default dist/snippet.js), with the configuration baked in from
// wrangler.toml `[vars]` or `[env.NAME.vars]` and `--var` overrides, read as `npm run check` and
// `wrangler deploy` read them (never from the process environment; `--env` alone picks the environment, not
// CLOUDFLARE_ENV), validated with the worker's rules.
// A refused configuration fails with the message `npm run check` prints; so does a bundle over 32,768 bytes.
// An argument it does not know prints the usage and exits 2, building nothing.
//
// --bake-origin-token  bake ORIGIN_TOKEN (from the environment, never from wrangler.toml) into the bundle, so
//                      the Snippet sends it in x-origin-token. Anyone who can read the zone's Snippets can read it.
import { ConfigError } from "../src/shared/config/config-error.ts";
import { type FlagSpec, readWranglerVars, scriptArgsOrExit, varFlags } from "./lib/wrangler-vars.ts";
import { bannerFor, buildSnippet, describeSize, removeSnippet, SNIPPET_LIMIT_BYTES, writeSnippet } from "./lib/snippet-bundle.ts";

const FLAGS: FlagSpec[] = [
  { flag: "--env", short: "-e", value: "NAME", doc: "bake wrangler.toml [env.NAME.vars] instead of [vars]" },
  { flag: "--var", value: "NAME:VALUE", doc: "override one var, as npm run check and wrangler deploy take it (repeatable)" },
  { flag: "--outfile", value: "PATH", doc: "where to write the Snippet (default dist/snippet.js)" },
  { flag: "--bake-origin-token", doc: "bake ORIGIN_TOKEN from the environment in (readable by anyone who can read the zone's Snippets)" },
];

const args = process.argv.slice(2);
const parsed = scriptArgsOrExit("build:snippet", args, FLAGS);
const envName = parsed.values.get("--env");
// Refusals name the configuration as `npm run check` does; the banner and the summary also name the overrides.
const where = envName ? `wrangler.toml [env.${envName}]` : "wrangler.toml [vars]";
const outfile = parsed.values.get("--outfile") ?? "dist/snippet.js";
const bakeToken = parsed.switches.has("--bake-origin-token");

function fail(message: string): never {
  console.error(message);
  removeSnippet(outfile);
  process.exit(1);
}

let overrides: Record<string, string>;
try {
  overrides = varFlags(args);
} catch (error) {
  // Before anything else: a --var it cannot honour leaves any earlier build where it is.
  console.error((error as Error).message);
  process.exit(1);
}
const overridden = Object.keys(overrides);
const source = overridden.length === 0 ? where : `${where} with --var ${overridden.join(", ")}`;

const originToken = process.env.ORIGIN_TOKEN ?? "";
if (bakeToken && originToken === "") {
  fail("--bake-origin-token: set ORIGIN_TOKEN in the environment (the same secret the origin expects); it is never read from wrangler.toml.");
}

let vars;
try {
  vars = readWranglerVars("wrangler.toml", envName, overrides);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}

let snippet;
try {
  snippet = await buildSnippet({
    vars,
    originToken: bakeToken ? originToken : "",
    banner: bannerFor(source),
  });
} catch (error) {
  fail(error instanceof ConfigError ? `${where}: ${error.message}` : String(error instanceof Error ? error.message : error));
}

if (snippet.bytes > SNIPPET_LIMIT_BYTES) {
  fail(`${source}: the Snippet is too large: ${describeSize(snippet)}. Snippets are limited to 32 KB; nothing was written.`);
}
writeSnippet(outfile, snippet);

const { cors } = snippet.spec;
const origins = cors.anyOrigin ? "*" : [...cors.exactOrigins, ...cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`)].join(", ");
console.log(`${source}: Snippet built to ${outfile}`);
console.log(`  size    ${describeSize(snippet)}`);
console.log(`  CORS    ${origins || "off"}${cors.credentials ? " (with credentials)" : ""}`);
console.log("  origin  item reads continue to the zone's origin (and its cache): ORIGIN_URL, ORIGIN_TIMEOUT_MS and EDGE_CACHE_TTL do not apply");
console.log(
  bakeToken
    ? "  token   ORIGIN_TOKEN is baked in: anyone who can read this file or the zone's Snippets can read it"
    : "  token   none: the Snippet sends no x-origin-token (--bake-origin-token bakes ORIGIN_TOKEN in)",
);
