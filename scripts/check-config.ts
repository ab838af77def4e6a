// `npm run check [-- --env NAME] [--var NAME:VALUE ...]`: validates the worker's vars with the same rules the
// worker applies at startup, so a refused configuration fails here (and before `deploy`) instead of answering
// 500 in production. It reads what `wrangler deploy` deploys: wrangler.toml and `--var` flags, never the
// process environment (wrangler ignores it for vars).
import { ConfigError } from "../src/shared/config/config-error.ts";
import { parseEdgeConfig } from "../src/edge/config/parse-edge-config.ts";
import { envFlag, readWranglerVars, varFlags } from "./lib/wrangler-vars.ts";

const args = process.argv.slice(2);
const envName = envFlag(args);
const where = envName ? `wrangler.toml [env.${envName}]` : "wrangler.toml [vars]";
try {
  const spec = parseEdgeConfig(readWranglerVars("wrangler.toml", envName, varFlags(args)));
  const origins = spec.cors.anyOrigin ? "*" : [...spec.cors.exactOrigins, ...spec.cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`)].join(", ");
  console.log(`${where}: configuration OK (origin ${spec.origin.url}; CORS ${origins || "off"})`);
} catch (error) {
  console.error(error instanceof ConfigError ? `${where}: ${error.message}` : String(error instanceof Error ? error.message : error));
  process.exit(1);
}
