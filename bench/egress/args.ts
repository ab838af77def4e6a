// Command line of `npm run egress`.

import { PURGE_PLANS, type PurgePlanName } from "../../src/origin/purge/token-bucket.ts";
import { DEFAULT_EDGE_START, EDGE_STARTS, type EdgeStart } from "./prefill.ts";

export interface EgressArgs {
  mix: string;
  log: string | undefined;
  requests: number | undefined;
  warmup: number | undefined;
  concurrency: number | undefined;
  rate: number | undefined;
  seed: number | undefined;
  requestsPerDay: number;
  usdPerGb: number;
  json: string;
  svg: string;
  markdown: string;
  maxRatio: number;
  check: boolean;
  verbose: boolean;
  render: string | undefined;
  overlap: boolean;
  /** The Cloudflare plan whose purge rate limit purge mode runs under (stand-in and origin). */
  purgePlan: PurgePlanName;
  /** The slim-edge systems' starting edge cache: prefilled (warm), empty (cold), or both measured (prefill.ts). */
  edgeStart: EdgeStart;
  help: boolean;
}

export const DEFAULT_MIX = "bench/egress/mix.default.json";

export const USAGE = `usage: npm run egress -- [options]

Replays a traffic mix against the seed system ("before": ingress-nginx CORS at a Node origin) and against
slim-edge (worker under Miniflare → byte-counting relay → origin) in two modes side by side: "after", TTL mode
(the mix's EDGE_CACHE_TTL, no purge), and purge mode (items and 404s kept a day, the origin purging each change
through a local stand-in of Cloudflare's purge API that deletes from the worker's cache). Reports the bytes the
origin sends per request the edge receives, and for each write how long the edge served the old version.
Format of mix files and logs: bench/egress/README.md.

traffic
  --mix FILE               traffic mix (default ${DEFAULT_MIX}); its worker.vars configure the worker
  --log FILE               replay this access log instead of generating traffic from the mix
  --requests N             measured requests (default: the mix's "requests")
  --warmup N               warm-up requests before measuring (default: the mix's "warmupRequests"; 0 with --log)
  --concurrency N          keep-alive client connections (default: the mix's "concurrency")
  --rate N                 pace of the "after" replay, requests/s (default: the mix's "ratePerSecond"; 0 = unpaced)
  --seed N                 random seed (default: the mix's "seed")
  --overlap                let reads of one id overlap (concurrent misses reach the origin as they would in
                           production; totals stay exact, the split by class becomes approximate)
  --purge-plan NAME        purge mode's plan: free, pro, business or enterprise (default pro); sets the
                           stand-in's rate limit and the origin's CLOUDFLARE_PURGE_PLAN
  --edge-start WHEN        the edge cache the slim-edge systems start with (never "before", which has none):
                           warm  (default) prefilled: every id the traffic reads is read once through each
                                 edge before the warm-up (not counted), as an edge that has run for a day holds
                                 them (purge mode keeps items and 404s 86400 s); the figures are a steady state
                           cold  empty: every id's first read is a miss in the figures (a cold start)
                           both  warm, then a cold pair of systems with the same events: both in one report
projection
  --requests-per-day N     default 1e9
  --usd-per-gb X           default 0.09
output
  --json PATH              default egress-report/egress.json
  --svg PATH               default egress-report/egress.svg
  --markdown PATH          default egress-report/egress.md (the README tables)
  --max-ratio X            target for after/before (default 0.1); purge mode's targets are fixed: ≤ 1% of
                           before, staleness p99 ≤ 1 s
  --check                  exit 3 when a target is not met
  --verbose                show the origin's and wrangler's output
  --render JSON            no run: print the table and write the SVG/Markdown of an earlier report
exit status: 0 done, 1 the measurement is not trustworthy (socket and messages disagree, requests
failed) or a system failed, 2 bad input, 3 target missed with --check, 130 interrupted`;

export class ArgsError extends Error {}

export function parseArgs(argv: readonly string[]): EgressArgs {
  const args: EgressArgs = {
    mix: DEFAULT_MIX,
    log: undefined,
    requests: undefined,
    warmup: undefined,
    concurrency: undefined,
    rate: undefined,
    seed: undefined,
    requestsPerDay: 1e9,
    usdPerGb: 0.09,
    json: "egress-report/egress.json",
    svg: "egress-report/egress.svg",
    markdown: "egress-report/egress.md",
    maxRatio: 0.1,
    check: false,
    verbose: false,
    render: undefined,
    overlap: false,
    purgePlan: "pro",
    edgeStart: DEFAULT_EDGE_START,
    help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    const inline = eq === -1 ? undefined : arg.slice(eq + 1);
    const value = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[++i];
      if (v === undefined || v.startsWith("--")) throw new ArgsError(`${name} needs a value`);
      return v;
    };
    const count = (min: number, max: number): number => {
      const raw = value();
      const n = Number(raw);
      if (!/^\d+(\.\d+)?(e\d+)?$/i.test(raw) || !Number.isInteger(n) || n < min || n > max) {
        throw new ArgsError(`${name} ${raw}: expected a whole number from ${min} to ${max}`);
      }
      return n;
    };
    const positive = (): number => {
      const raw = value();
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n) || n <= 0) throw new ArgsError(`${name} ${raw}: expected a number above 0`);
      return n;
    };
    switch (name) {
      case "--mix":
        args.mix = value();
        break;
      case "--log":
        args.log = value();
        break;
      case "--requests":
        args.requests = count(1, 10_000_000);
        break;
      case "--warmup":
        args.warmup = count(0, 10_000_000);
        break;
      case "--concurrency":
        args.concurrency = count(1, 1024);
        break;
      case "--rate":
        args.rate = count(0, 1_000_000);
        break;
      case "--seed":
        args.seed = count(0, 2 ** 32 - 1);
        break;
      case "--requests-per-day":
        args.requestsPerDay = positive();
        break;
      case "--usd-per-gb":
        args.usdPerGb = positive();
        break;
      case "--json":
        args.json = value();
        break;
      case "--svg":
        args.svg = value();
        break;
      case "--markdown":
        args.markdown = value();
        break;
      case "--max-ratio":
        args.maxRatio = positive();
        break;
      case "--check":
        args.check = true;
        break;
      case "--render":
        args.render = value();
        break;
      case "--overlap":
        args.overlap = true;
        break;
      case "--purge-plan": {
        const plan = value();
        if (!(plan in PURGE_PLANS)) throw new ArgsError(`--purge-plan ${plan}: expected one of ${Object.keys(PURGE_PLANS).join(", ")}`);
        args.purgePlan = plan as PurgePlanName;
        break;
      }
      case "--edge-start": {
        const start = value();
        if (!(EDGE_STARTS as readonly string[]).includes(start)) throw new ArgsError(`--edge-start ${start}: expected one of ${EDGE_STARTS.join(", ")}`);
        args.edgeStart = start as EdgeStart;
        break;
      }
      case "--verbose":
        args.verbose = true;
        break;
      case "--help":
      case "-h":
        args.help = true;
        break;
      default:
        throw new ArgsError(`unknown option ${arg}`);
    }
  }
  return args;
}
