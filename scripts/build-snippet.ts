// `npm run build:snippet [-- --env NAME] [--outfile PATH] [--bake-origin-token]`: the Cloudflare Snippet as
// one ES module (default dist/snippet.js), with the configuration baked in from wrangler.toml `[vars]` or
// `[env.NAME.vars]` (environment variables of the same names override), validated with the worker's rules.
// A refused configuration fails with the message `npm run check` prints; so does a bundle over 32,768 bytes.
//
// --bake-origin-token  bake ORIGIN_TOKEN (from the environment, never from wrangler.toml) into the bundle, so
//                      the Snippet sends it in x-origin-token. Anyone who can read the zone's Snippets can read it.
import { ConfigError } from "../src/shared/config/config-error.ts";
import { envFlag, readWranglerVars } from "./lib/wrangler-vars.ts";
import { bannerFor, buildSnippet, describeSize, removeSnippet, SNIPPET_LIMIT_BYTES, writeSnippet } from "./lib/snippet-bundle.ts";

const args = process.argv.slice(2);
const envName = envFlag(args);
const where = envName ? `wrangler.toml [env.${envName}]` : "wrangler.toml [vars]";
const outfile = option(args, "--outfile") ?? "dist/snippet.js";
const bakeToken = args.includes("--bake-origin-token");

function option(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === name) return argv[i + 1];
    if (argv[i]!.startsWith(`${name}=`)) return argv[i]!.slice(name.length + 1);
  }
  return undefined;
}

function fail(message: string): never {
  console.error(message);
  removeSnippet(outfile);
  process.exit(1);
}

const originToken = process.env.ORIGIN_TOKEN ?? "";
if (bakeToken && originToken === "") {
  fail("--bake-origin-token: set ORIGIN_TOKEN in the environment (the same secret the origin expects); it is never read from wrangler.toml.");
}

let vars;
try {
  vars = readWranglerVars("wrangler.toml", envName, process.env);
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}

let snippet;
try {
  snippet = await buildSnippet({
    vars,
    originToken: bakeToken ? originToken : "",
    banner: bannerFor(where),
  });
} catch (error) {
  fail(error instanceof ConfigError ? `${where}: ${error.message}` : String(error instanceof Error ? error.message : error));
}

if (snippet.bytes > SNIPPET_LIMIT_BYTES) {
  fail(`${where}: the Snippet is too large: ${describeSize(snippet)}. Snippets are limited to 32 KB; nothing was written.`);
}
writeSnippet(outfile, snippet);

const { cors } = snippet.spec;
const origins = cors.anyOrigin ? "*" : [...cors.exactOrigins, ...cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`)].join(", ");
console.log(`${where}: Snippet built to ${outfile}`);
console.log(`  size    ${describeSize(snippet)}`);
console.log(`  CORS    ${origins || "off"}${cors.credentials ? " (with credentials)" : ""}`);
console.log("  origin  item reads continue to the zone's origin (and its cache): ORIGIN_URL, ORIGIN_TIMEOUT_MS and EDGE_CACHE_TTL do not apply");
console.log(
  bakeToken
    ? "  token   ORIGIN_TOKEN is baked in: anyone who can read this file or the zone's Snippets can read it"
    : "  token   none: the Snippet sends no x-origin-token (--bake-origin-token bakes ORIGIN_TOKEN in)",
);
