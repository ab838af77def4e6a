// `npm run deploy [-- --env NAME] [--var NAME:VALUE ...] [OTHER WRANGLER DEPLOY ARGS]`: regenerate, refuse a
// bad configuration, then `wrangler deploy` with the same arguments. The check gets those of them that decide
// the vars (--env, --var, --config, --cwd, read as wrangler reads them), so it checks the file and the vars
// wrangler deploys. A configuration the worker would refuse never reaches production.
import { spawnSync } from "node:child_process";
import { varArguments } from "./lib/wrangler-vars.ts";

const args = process.argv.slice(2);
for (const [command, commandArgs] of [
  ["node", ["scripts/gen-internal-headers.ts"]],
  ["node", ["scripts/check-config.ts", "--deploy", ...varArguments(args)]],
  ["wrangler", ["deploy", ...args]],
] as const) {
  const result = spawnSync(command, commandArgs, { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
