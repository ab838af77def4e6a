// `npm run check [-- --env NAME]`: validates the worker's vars with the same rules the worker applies at
// startup, so a refused configuration fails here (and before `deploy`) instead of answering 500 in production.
import { ConfigError } from "../src/shared/config/config-error.ts";
import { parseEdgeConfig } from "../src/edge/config/parse-edge-config.ts";
import { envFlag, readWranglerVars } from "./lib/wrangler-vars.ts";

const envName = envFlag(process.argv.slice(2));
const where = envName ? `wrangler.toml [env.${envName}]` : "wrangler.toml [vars]";
try {
  const spec = parseEdgeConfig(readWranglerVars("wrangler.toml", envName));
  const origins = spec.cors.anyOrigin ? "*" : [...spec.cors.exactOrigins, ...spec.cors.originPatterns.map((p) => `${p.prefix}*${p.suffix}`)].join(", ");
  console.log(`${where}: configuration OK (origin ${spec.origin.url}; CORS ${origins || "off"})`);
} catch (error) {
  console.error(error instanceof ConfigError ? `${where}: ${error.message}` : String(error instanceof Error ? error.message : error));
  process.exit(1);
}
