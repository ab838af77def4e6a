// `npm run deploy [-- --env NAME] [--var NAME:VALUE ...]`: regenerate, refuse a bad configuration, then
// `wrangler deploy` with the same arguments (the check reads `--var` as wrangler does). A configuration the
// worker would refuse never reaches production.
import { spawnSync } from "node:child_process";

const args = process.argv.slice(2);
for (const [command, commandArgs] of [
  ["node", ["scripts/gen-internal-headers.ts"]],
  ["node", ["scripts/check-config.ts", ...args]],
  ["wrangler", ["deploy", ...args]],
] as const) {
  const result = spawnSync(command, commandArgs, { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
