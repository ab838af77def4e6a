// `npm run test:browser` (node test/browser/run.ts): the CORS end to end, judged by a real browser.
//
// Starts the local stack (test/browser/support/stack.ts: the origin service behind a recording relay, two
// workers under `wrangler dev`, a page server), launches Debian's Chromium through playwright-core, runs the
// browser cases (cases.ts) and the raw-wire cases (wire.ts), prints one line per check and a closing
// "N passed, N failed" line, and exits non-zero on any failure.
//
// Private Network Access / Local Network Access: the pages, the worker and the origin all listen on
// 127.0.0.1, so Chromium puts the page and its target in the same ("loopback") address space and applies no
// private-network check; CORS_ALLOW_PRIVATE_NETWORK stays false. A page Chromium considers public (forced
// with --ip-address-space-overrides) is blocked before CORS whatever the worker answers: Chromium ≥ 142
// replaced PNA preflights with Local Network Access, which refuses a non-secure public page outright
// ("InsecureLocalNetwork") and asks the user for a secure one. The last check records that, as information.
import { BenchCli } from "../../bench/lib/cli.ts";
import { chromiumPath, launchChromium, watchNetwork } from "./support/chromium.ts";
import { runBrowserCases } from "./cases.ts";
import { Runner } from "./support/runner.ts";
import { startStack, type Stack } from "./support/stack.ts";
import { runWireChecks } from "./wire.ts";

const started = performance.now();
let stack: Stack | undefined;
const runners: Runner[] = [];
let fatal: unknown;

// No flags: --help prints what it runs, anything else is refused before anything starts.
new BenchCli(
  "npm run test:browser",
  "usage: npm run test:browser\n  Starts the local stack and runs the CORS cases in Debian's Chromium (CHROMIUM_PATH to use another), then the\n  raw-wire cases; prints one line per check and exits 1 on any failure.",
  {},
);

// Before the stack, so a machine without Chromium learns the fix at once, not after the stack has started.
try {
  chromiumPath();
} catch (error) {
  process.stdout.write(`✗ ${(error as Error).message}\n`);
  process.exit(1);
}

try {
  process.stdout.write("starting the stack (origin, relay, two workers under wrangler dev, page server)...\n");
  stack = await startStack();
  process.stdout.write(
    `  pages :${stack.pages.port}  origin ${stack.origin.url}  relay ${stack.relay.url}  ` +
      `allow-list worker :${stack.workers.allowList.port}  any-origin worker :${stack.workers.anyOrigin.port}\n`,
  );
  const browser = await launchChromium();
  process.stdout.write(`Chromium ${browser.version()}\n`);
  try {
    const browserRunner = new Runner("browser");
    runners.push(browserRunner);
    await runBrowserCases(browserRunner, browser, stack);
  } finally {
    await browser.close();
  }

  const wireRunner = new Runner("wire");
  runners.push(wireRunner);
  await runWireChecks(wireRunner, stack);

  await reportLocalNetworkAccess(stack);
} catch (error) {
  fatal = error;
} finally {
  await stack?.stop();
}

const outcomes = runners.flatMap((r) => r.outcomes);
const passed = outcomes.filter((o) => o.ok).length;
const failed = outcomes.length - passed + (fatal === undefined ? 0 : 1);
if (fatal !== undefined) process.stdout.write(`\n✗ the run could not complete: ${(fatal as Error)?.stack ?? String(fatal)}\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
process.exit(failed === 0 ? 0 : 1);

/** Information only (not a pass/fail check): what this Chromium does when the page is in the public space. */
async function reportLocalNetworkAccess(stack: Stack): Promise<void> {
  const browser = await launchChromium([`--ip-address-space-overrides=127.0.0.1:${stack.pages.port}=public`]);
  try {
    const page = await browser.newPage();
    const network = await watchNetwork(page);
    await page.goto(`${stack.pageOrigin("app.test")}/`);
    const url = `${stack.workers.allowList.apiUrl}/items/24`;
    const result = await page.evaluate((u) => (globalThis as unknown as { probe(s: { url: string }): Promise<unknown> }).probe({ url: u }), url);
    const seen = (await network.settled(url)).find((r) => !r.preflight);
    process.stdout.write(
      `  i info › a page in the public address space fetching the loopback worker: ${JSON.stringify(result)}; ` +
        `Chromium: ${seen?.failed ?? "not failed"} ${seen?.corsError ?? ""} (Local Network Access, before any CORS check)\n`,
    );
  } catch (error) {
    process.stdout.write(`  i info › Local Network Access probe did not run: ${String(error)}\n`);
  } finally {
    await browser.close();
  }
}
