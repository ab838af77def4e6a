// `npm start [-- WRANGLER_DEV_ARGS]`: the whole stack on this machine: the origin cache service on
// 127.0.0.1:8788 (SQLite under ./data/, seeded with sample items on first run) and the worker under
// `wrangler dev` on 127.0.0.1:8787 in front of it. Ctrl-C stops both.
import { startOrigin, startWranglerDev } from "./lib/local-stack.ts";

const ORIGIN_PORT = Number(process.env.PORT ?? 8788);
const WORKER_PORT = 8787;

const origin = await startOrigin({
  port: ORIGIN_PORT,
  databasePath: process.env.DATABASE_URL ?? "./data/items.sqlite",
  seedItems: 1000,
  metricsPort: 8789,
  echo: true,
});
const worker = await startWranglerDev({
  port: WORKER_PORT,
  vars: { ORIGIN_URL: origin.url },
  extraArgs: process.argv.slice(2),
  echo: true,
}).catch(async (error: unknown) => {
  await origin.stop();
  throw error;
});

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await Promise.all([worker.stop(), origin.stop()]);
  process.exit(0);
}
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
// Only now: whoever waits for this message may stop us at once, and both children must stop with us.
console.log(`
slim-edge is running:
  worker (edge)  ${worker.url}   → try: curl -i ${worker.url}/items/1
  origin         ${origin.url}   → try: curl -i ${origin.url}/items/1
  origin metrics http://127.0.0.1:8789/metrics
  a preflight:   curl -i -X OPTIONS ${worker.url}/items/1 -H 'Origin: https://app.example.com' -H 'Access-Control-Request-Method: GET'
                 (CORS is off until you allow origins: npm start -- --var CORS_ALLOW_ORIGINS:https://app.example.com)
Ctrl-C stops both.
`);
for (const running of [origin, worker]) {
  running.child.once("exit", (code) => {
    if (!stopping) {
      console.error(`${running === origin ? "origin" : "worker"} exited (${code}); stopping the stack.`);
      void stop();
    }
  });
}
