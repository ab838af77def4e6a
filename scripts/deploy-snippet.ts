// `npm run deploy:snippet -- --expression 'http.host eq "api.example.com"' [--env NAME] [--var NAME:VALUE ...]
//   [--name NAME] [--bake-origin-token] [--file PATH] [--dry-run]`
//
// Builds the Snippet (npm run gen, then scripts/build-snippet.ts with the same --env, --var and
// --bake-origin-token), prints the plan, then uploads it and points a snippet rule at it with the Cloudflare API
// (https://developers.cloudflare.com/rules/snippets/create-api/):
//   1. GET  /zones/{zone_id}/snippets/snippet_rules    the zone's rules (step 3 replaces the whole list); a
//                                                      failure here stops the deploy before anything changed
//   2. PUT  /zones/{zone_id}/snippets/{snippet_name}   multipart: `files` (the module) + `metadata` {"main_module"}
//   3. PUT  /zones/{zone_id}/snippets/snippet_rules    the same list with this snippet's rule added or replaced
// --dry-run prints those requests exactly as they would be sent, and sends nothing.
// --file PATH uploads an already built Snippet instead of building one (e.g. the artifact of a CI build step).
// An argument it does not know (`--dryrun`) prints the usage and exits 2, building and sending nothing.
//
// Environment: CLOUDFLARE_API_TOKEN (Zone > Snippets > Edit), CLOUDFLARE_ZONE_ID; SNIPPET_NAME and
// SNIPPET_EXPRESSION may stand in for --name and --expression; CLOUDFLARE_API_BASE (the API's address; tests
// point it at a loopback stand-in, the only place a test run may send to). wrangler cannot deploy Snippets.
// Every answer must be Cloudflare's JSON envelope with "success": true: anything else (an HTML page from a
// proxy, a redirect's target) stops the deploy, and step 3 is never sent on a list that was not read.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { type FlagSpec, scriptArgsOrExit, varFlags } from "./lib/wrangler-vars.ts";
import { SNIPPET_LIMIT_BYTES } from "./lib/snippet-bundle.ts";

const API = (process.env.CLOUDFLARE_API_BASE ?? "https://api.cloudflare.com/client/v4").replace(/\/+$/, "");
const MAIN_MODULE = "snippet.js";
// Fixed, so that --dry-run shows the exact bytes that are sent; it cannot occur in a minified module's text.
const BOUNDARY = "slim-edge-snippet-3f9c1e7a5b2d4c8e";

const FLAGS: FlagSpec[] = [
  { flag: "--expression", value: "EXPR", doc: "the snippet rule's expression, e.g. 'http.host eq \"api.example.com\"' (or SNIPPET_EXPRESSION)" },
  { flag: "--env", short: "-e", value: "NAME", doc: "build from wrangler.toml [env.NAME.vars]; the snippet is named slim_edge_NAME" },
  { flag: "--var", value: "NAME:VALUE", doc: "override one var in the build, as npm run check takes it (repeatable)" },
  { flag: "--name", value: "NAME", doc: "the snippet's name, a-z 0-9 _ (default slim_edge or slim_edge_NAME; or SNIPPET_NAME)" },
  { flag: "--bake-origin-token", doc: "bake ORIGIN_TOKEN from the environment into the build" },
  { flag: "--file", value: "PATH", doc: "deploy this built Snippet instead of building one" },
  { flag: "--dry-run", doc: "print the exact requests and send nothing" },
];

function fail(message: string): never {
  console.error(`deploy:snippet: ${message}`);
  process.exit(1);
}

const args = process.argv.slice(2);
const parsed = scriptArgsOrExit("deploy:snippet", args, FLAGS);
const dryRun = parsed.switches.has("--dry-run");
const bakeToken = parsed.switches.has("--bake-origin-token");
const envName = parsed.values.get("--env");
const option = (flag: string) => parsed.values.get(flag);
let overrides: Record<string, string>;
try {
  overrides = varFlags(args);
} catch (error) {
  fail((error as Error).message);
}

// --- inputs: every problem at once ------------------------------------------------------------------------
const token = process.env.CLOUDFLARE_API_TOKEN ?? "";
const zoneId = process.env.CLOUDFLARE_ZONE_ID ?? "";
const name = option("--name") ?? process.env.SNIPPET_NAME ?? (envName ? `slim_edge_${envName.replace(/[^a-z0-9_]/g, "_")}` : "slim_edge");
const expression = option("--expression") ?? process.env.SNIPPET_EXPRESSION ?? "";
const prebuilt = option("--file");

const problems: string[] = [];
if (prebuilt !== undefined && (Object.keys(overrides).length > 0 || bakeToken)) {
  problems.push("--file deploys a built Snippet as it is: --var and --bake-origin-token apply only to a build (drop --file, or rebuild the file with them).");
}
if (token === "" && !dryRun) problems.push("CLOUDFLARE_API_TOKEN is not set: create an API token with Zone > Snippets > Edit for the zone.");
if (zoneId === "") problems.push("CLOUDFLARE_ZONE_ID is not set: the zone ID is on the zone's Overview page in the Cloudflare dashboard.");
else if (!/^[0-9a-f]{32}$/.test(zoneId)) problems.push(`CLOUDFLARE_ZONE_ID "${zoneId}" is not a zone ID (32 lowercase hex characters).`);
if (!/^[a-z0-9_]+$/.test(name)) problems.push(`the snippet name "${name}" may only contain a-z, 0-9 and _ (set --name or SNIPPET_NAME).`);
if (expression.trim() === "") {
  problems.push(`no rule expression: pass --expression (or SNIPPET_EXPRESSION), e.g. 'http.host eq "api.example.com"'. Match the API's whole host: preflights for any path and 404s are answered by the Snippet too.`);
}
let apiUrl: URL | undefined;
try {
  apiUrl = new URL(API);
} catch {
  // reported below
}
if (apiUrl === undefined || (apiUrl.protocol !== "https:" && apiUrl.protocol !== "http:")) {
  problems.push(`CLOUDFLARE_API_BASE "${API}" is not an http(s) URL; leave it unset for https://api.cloudflare.com/client/v4.`);
} else if (process.env.VITEST && !dryRun && !["127.0.0.1", "localhost", "[::1]"].includes(apiUrl.hostname)) {
  problems.push("refusing to deploy from a test run (VITEST is set) anywhere but a loopback CLOUDFLARE_API_BASE; use --dry-run.");
}
if (problems.length > 0) fail(`cannot deploy:\n${problems.map((p) => `  ${p}`).join("\n")}`);

// --- the module: built now, or given ------------------------------------------------------------------------
let file = prebuilt;
if (file === undefined) {
  file = "dist/snippet.js";
  const buildArgs = [
    ...(envName ? ["--env", envName] : []),
    ...Object.entries(overrides).flatMap(([varName, value]) => ["--var", `${varName}:${value}`]),
    ...(bakeToken ? ["--bake-origin-token"] : []),
  ];
  for (const [command, commandArgs] of [
    ["node", ["scripts/gen-internal-headers.ts"]],
    ["node", ["scripts/build-snippet.ts", ...buildArgs, "--outfile", file]],
  ] as const) {
    const result = spawnSync(command, commandArgs, { stdio: "inherit" });
    if (result.status !== 0) process.exit(result.status ?? 1);
  }
}
let code: Buffer;
try {
  code = readFileSync(file);
} catch {
  fail(`cannot read ${file}: build it first with npm run build:snippet.`);
}
if (code.byteLength > SNIPPET_LIMIT_BYTES) fail(`${file} is ${code.byteLength} bytes; Snippets are limited to ${SNIPPET_LIMIT_BYTES}.`);
if (code.includes(BOUNDARY)) fail(`${file} contains the multipart boundary; change BOUNDARY in scripts/deploy-snippet.ts.`);
const sha256 = createHash("sha256").update(code).digest("hex");

// --- the requests -------------------------------------------------------------------------------------------
const snippetUrl = `${API}/zones/${zoneId}/snippets/${name}`;
const rulesUrl = `${API}/zones/${zoneId}/snippets/snippet_rules`;
const authorization = token === "" ? "Bearer $CLOUDFLARE_API_TOKEN (not set)" : `Bearer $CLOUDFLARE_API_TOKEN (${token.length} characters, not shown)`;

const metadata = JSON.stringify({ main_module: MAIN_MODULE });
const head = (part: string) => `--${BOUNDARY}\r\n${part}\r\n\r\n`;
const filePartHead = head(`Content-Disposition: form-data; name="files"; filename="${MAIN_MODULE}"\r\nContent-Type: application/javascript+module`);
const metadataPart = `\r\n${head('Content-Disposition: form-data; name="metadata"')}${metadata}\r\n--${BOUNDARY}--\r\n`;
const uploadBody = Buffer.concat([Buffer.from(filePartHead), code, Buffer.from(metadataPart)]);

interface SnippetRule {
  id?: string;
  description?: string;
  enabled?: boolean;
  expression: string;
  snippet_name: string;
}
const rule: SnippetRule = {
  description: `slim-edge: CORS, internal headers and item routing at the edge (${basename(file)}, sha256 ${sha256.slice(0, 12)})`,
  enabled: true,
  expression,
  snippet_name: name,
};

console.log(`Snippet deploy plan: zone ${zoneId}, snippet "${name}", ${file} (${code.byteLength.toLocaleString("en-US")} bytes, sha256 ${sha256})`);
console.log(`  1. GET ${rulesUrl}\n     read the zone's snippet rules: step 3 replaces the whole list`);
console.log(`  2. PUT ${snippetUrl}\n     upload the module (creates the snippet, or replaces its code)`);
console.log(`  3. PUT ${rulesUrl}\n     the zone's rules with this one added, or replacing the rule that runs "${name}":\n     ${expression}`);

if (dryRun) {
  const show = (method: string, url: string, headers: string[], body: string) =>
    console.log(`\n--- ${method} ${url}\n${[`Authorization: ${authorization}`, ...headers].join("\n")}${body === "" ? "" : `\n\n${body}`}`);
  show("GET", rulesUrl, [], "");
  show("PUT", snippetUrl, [`Content-Type: multipart/form-data; boundary=${BOUNDARY}`, `Content-Length: ${uploadBody.byteLength}`],
    `${filePartHead}<the ${code.byteLength} bytes of ${file}, sha256 ${sha256}>${metadataPart}`);
  show("PUT", rulesUrl, ["Content-Type: application/json"],
    `${JSON.stringify({ rules: ["<every rule from step 1 that does not run this snippet, unchanged and in order>", rule] }, null, 2)}\n` +
      `(if a rule from step 1 already runs "${name}", this rule takes its place instead of being appended)`);
  console.log("\n--dry-run: nothing was sent.");
  process.exit(0);
}

// --- sending -------------------------------------------------------------------------------------------------
interface ApiResponse<T> {
  success?: boolean;
  errors?: { code?: number; message: string }[];
  result?: T;
}
/** An answer, and whether its body was JSON at all. */
type Reply<T> = ApiResponse<T> & { status: number; json: boolean };

async function call<T>(step: string, method: string, url: string, headers: Record<string, string>, body?: Buffer | string): Promise<Reply<T>> {
  let response: Response;
  try {
    response = await fetch(url, { method, headers: { Authorization: `Bearer ${token}`, ...headers }, body });
  } catch (error) {
    fail(`${step}: ${method} ${url} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  let parsed: ApiResponse<T> = {};
  let json = false;
  try {
    const value: unknown = await response.json();
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      parsed = value as ApiResponse<T>;
      json = true;
    }
  } catch {
    // Not JSON: reported from the status.
  }
  return { ...parsed, status: response.status, json };
}

/** Accepted: a 2xx that is Cloudflare's envelope saying `"success": true`. */
const accepted = (reply: Reply<unknown>) => reply.status < 300 && reply.json && reply.success === true;

function apiFailure(step: string, reply: Reply<unknown>): never {
  const errors = (reply.errors ?? []).map((e) => `  [${e.code ?? "?"}] ${e.message}`).join("\n");
  const what = !reply.json ? ", not Cloudflare's JSON" : reply.success === undefined ? ', no "success" in the answer' : "";
  fail(`${step} failed (HTTP ${reply.status}${what})${errors ? `:\n${errors}` : ""}; nothing after this step was sent`);
}

/** The rules of an accepted list: an array, `{ rules: [...] }`, or none (null); undefined for any other shape. */
function rulesIn(result: unknown): SnippetRule[] | undefined {
  if (result === null || result === undefined) return [];
  if (Array.isArray(result)) return result as SnippetRule[];
  if (typeof result !== "object") return undefined;
  const { rules } = result as { rules?: unknown };
  return Array.isArray(rules) ? (rules as SnippetRule[]) : undefined;
}

const listed = await call<unknown>("1. read rules", "GET", rulesUrl, {});
let existing: SnippetRule[] = [];
if (accepted(listed)) {
  const rules = rulesIn(listed.result);
  // Replacing a list we could not read would delete the zone's other rules.
  if (rules === undefined) fail(`1. read rules: the answer's "result" is not a list of rules (HTTP ${listed.status}); nothing was changed`);
  existing = rules;
} else if (!(listed.json && (listed.errors ?? []).some((e) => e.code === 10003))) {
  // Error 10003 from the API: the zone has no snippet rules yet. Anything else stops us before anything
  // changed, a 404 with another error too (a wrong zone or route): writing back a list we did not read
  // would delete the zone's other rules.
  apiFailure("1. read rules", listed);
}
console.log(`1. the zone has ${existing.length} snippet rule(s)`);
const upload = await call("2. upload", "PUT", snippetUrl, { "Content-Type": `multipart/form-data; boundary=${BOUNDARY}` }, uploadBody);
if (!accepted(upload)) apiFailure("2. upload", upload);
console.log(`2. uploaded "${name}"`);

const keep = ({ description, enabled, expression, snippet_name }: SnippetRule): SnippetRule =>
  description === undefined ? { enabled, expression, snippet_name } : { description, enabled, expression, snippet_name };
const position = existing.findIndex((r) => r.snippet_name === name);
const rules = existing.filter((r) => r.snippet_name !== name).map(keep);
rules.splice(position === -1 ? rules.length : position, 0, rule);

const updated = await call("3. write rules", "PUT", rulesUrl, { "Content-Type": "application/json" }, JSON.stringify({ rules }));
if (!accepted(updated)) apiFailure("3. write rules", updated);
console.log(`3. ${position === -1 ? "added" : "replaced"} the rule: "${name}" runs on ${expression}\nDeployed. Snippets take a few seconds to reach every data center (error 1205 until then).`);
