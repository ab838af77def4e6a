import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";

// The worker as wrangler.toml configures it (CORS off by default): the shipped [vars] compile and serve.
const worker = (exports as unknown as { default: Fetcher }).default;

it("serves with the shipped wrangler.toml vars", async () => {
  const res = await worker.fetch("https://edge.example.net/nope", { headers: { origin: "https://a.example.com" } });
  expect(res.status).toBe(404);
  expect([...res.headers.keys()].filter((name) => name.startsWith("access-control-") || name === "vary")).toEqual([]);
});
