// `npm run measure:cors`: the CORS byte budget measured on the wire. Starts the origin and the worker under
// `wrangler dev` with the budget's allow-list, sends each budget case as raw HTTP/1.1, and prints a Markdown
// table of the CORS header bytes received next to the budget (the README's table comes from here).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BenchCli } from "../bench/lib/cli.ts";
import { BUDGET_CASES, BUDGET_VARS, corsWireBytes } from "./lib/cors-budget-cases.ts";
import { startOrigin, startWranglerDev } from "./lib/local-stack.ts";
import { rawRequest } from "./lib/raw-http.ts";
import { Teardown } from "./lib/teardown.ts";

// No flags: --help prints what it does, anything else is refused before anything starts.
new BenchCli(
  "npm run measure:cors",
  "usage: npm run measure:cors\n  Starts the origin and the worker under wrangler dev with the budget's allow-list, sends each budget case as\n  raw HTTP/1.1 and prints the CORS header bytes received beside the budget (exit 1 if a case is over it).",
  {},
);

// Ctrl-C (or any early end) stops both pieces and removes the data: they run in process groups of their own.
const teardown = new Teardown();
teardown.installSignalHandlers();
const dataDir = mkdtempSync(join(tmpdir(), "slim-edge-budget-"));
teardown.add(async () => rmSync(dataDir, { recursive: true, force: true }));
let overBudget = 0;
try {
  const origin = await teardown.start((onSpawn) => startOrigin({ databasePath: join(dataDir, "items.sqlite"), seedItems: 10, onSpawn }));
  const worker = await teardown.start((onSpawn) => startWranglerDev({ vars: { ...BUDGET_VARS, ORIGIN_URL: origin.url }, onSpawn }));
  console.log("| response | CORS header lines received | bytes | budget | ingress-nginx |");
  console.log("|---|---|---:|---:|---:|");
  for (const testCase of BUDGET_CASES) {
    const response = await rawRequest(worker.port, testCase.method, "/items/1", testCase.headers);
    const bytes = corsWireBytes(response.headers);
    if (bytes > testCase.budget) overBudget++;
    const lines = response.headerLines.filter((line) => /^(access-control-|vary:)/i.test(line));
    const shown = lines.map((line) => `\`${line}\``).join("<br>") || "none";
    console.log(`| ${testCase.name} (${response.statusLine.split(" ")[1]}) | ${shown} | ${bytes} | ${testCase.budget} | ${testCase.ingressNginx} |`);
  }
} finally {
  await teardown.run();
}
if (overBudget > 0) {
  console.error(`${overBudget} case(s) over budget`);
  process.exit(1);
}
