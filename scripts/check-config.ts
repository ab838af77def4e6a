// `npm run check [-- --env NAME] [--var NAME:VALUE ...] [--config PATH] [--cwd DIR]`: validates the worker's
// vars with the same rules the worker applies at startup, so a refused configuration fails here (and before
// `deploy`) instead of answering 500 in production. It reads what `wrangler deploy` with the same arguments
// deploys: the wrangler configuration (`--config`, `--cwd` as wrangler reads them), the environment (`--env`,
// else CLOUDFLARE_ENV, as wrangler picks it) and `--var` flags, never other variables of the process
// environment (wrangler ignores them for vars). An argument it does not know is refused (exit 2): a misspelt
// `--env` must not pass for a check of `[vars]`.
import { checkedWorkerVars, envFlag, type FlagSpec, scriptArgsOrExit } from "./lib/wrangler-vars.ts";

const FLAGS: FlagSpec[] = [
  { flag: "--env", short: "-e", value: "NAME", mayBeEmpty: true, doc: 'check [env.NAME.vars] instead of [vars] (default: CLOUDFLARE_ENV, as wrangler; --env="": [vars])' },
  { flag: "--var", value: "NAME:VALUE", doc: "a var on top, as wrangler deploy --var passes it (repeatable)" },
  { flag: "--config", short: "-c", value: "PATH", doc: "the wrangler configuration to read (default wrangler.toml), as wrangler's --config" },
  { flag: "--cwd", value: "DIR", doc: "read it from DIR, as wrangler's --cwd" },
  { flag: "--deploy", doc: "also refuse what only works locally: an ORIGIN_URL on loopback (npm run deploy passes it)" },
];

const args = process.argv.slice(2);
const { switches } = scriptArgsOrExit("check", args, FLAGS);
try {
  const { spec, where } = checkedWorkerVars(args, envFlag(args));
  if (switches.has("--deploy") && isLoopback(new URL(spec.origin.url).hostname)) {
    throw new Error(
      `${where}: ORIGIN_URL ${spec.origin.url} is this machine's loopback, which a deployed worker cannot reach (every item read would be 502): set the origin's public URL in [env.NAME.vars] and deploy with --env NAME, or pass --var ORIGIN_URL:https://origin.example.com.`,
    );
  }
  const origins = spec.cors.anyOrigin ? "*" : [...spec.cors.exactOrigins, ...spec.cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`)].join(", ");
  console.log(`${where}: configuration OK (origin ${spec.origin.url}; CORS ${origins || "off"})`);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}

/** localhost, 127.0.0.0/8, [::1]: the shipped [vars] point at `npm start`'s origin. */
function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") || /^127\.\d+\.\d+\.\d+$/.test(hostname) || hostname === "[::1]";
}
