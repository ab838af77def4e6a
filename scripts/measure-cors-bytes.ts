// `npm run measure:cors`: the CORS byte budget measured on the wire. Starts the origin and the worker under
// `wrangler dev` with the budget's allow-list, sends each budget case as raw HTTP/1.1, and prints a Markdown
// table of the CORS header bytes received next to the budget (the README's table comes from here).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUDGET_CASES, BUDGET_VARS, corsWireBytes } from "./lib/cors-budget-cases.ts";
import { startOrigin, startWranglerDev } from "./lib/local-stack.ts";
import { rawRequest } from "./lib/raw-http.ts";

const dataDir = mkdtempSync(join(tmpdir(), "slim-edge-budget-"));
const origin = await startOrigin({ databasePath: join(dataDir, "items.sqlite"), seedItems: 10 });
const worker = await startWranglerDev({ vars: { ...BUDGET_VARS, ORIGIN_URL: origin.url } });
let overBudget = 0;
try {
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
  await worker.stop();
  await origin.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
if (overBudget > 0) {
  console.error(`${overBudget} case(s) over budget`);
  process.exit(1);
}
