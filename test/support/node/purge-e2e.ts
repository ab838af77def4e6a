// What the purge end-to-end tests (test/node/purge-*.test.ts) do alike: read items through the worker, write
// them straight to the origin, and find the stand-in's accepted purges of an item.
import { expect } from "vitest";
import type { RecordedCall } from "../../../scripts/lib/cloudflare-api-stand-in.ts";

/**
 * Reads through the worker at `edgeUrl()` and PUTs to the origin at `originUrl()` (getters: both are known
 * only once the test has started them). Every id touched goes into `ids`, which the `items` tag reaches.
 */
export function itemTraffic(edgeUrl: () => string, originUrl: () => string, ids: Set<string>) {
  return {
    async read(id: string): Promise<{ status: number; body: string }> {
      ids.add(id);
      const res = await fetch(`${edgeUrl()}/items/${id}`);
      return { status: res.status, body: await res.text() };
    },
    async write(id: string, body: string): Promise<void> {
      ids.add(id);
      const res = await fetch(`${originUrl()}/items/${id}`, { method: "PUT", headers: { "content-type": "application/json" }, body });
      expect(res.status).toBe(204);
    },
  };
}

/** The accepted purge calls that named `item:<id>`. */
export function acceptedPurgesOf(calls: readonly RecordedCall[], id: string): RecordedCall[] {
  return calls.filter((c) => c.path.endsWith("/purge_cache") && c.outcome === "accepted" && (c.body as { tags?: string[] }).tags?.includes(`item:${id}`));
}

/** An origin on SQLite that purges through the stand-in at `apiBase` on the Pro plan, repeating each purge after `repeatMs`. */
export function purgingOriginEnv(o: { port: number; databaseUrl: string; apiBase: string; zoneId: string; token: string; repeatMs: number }): Record<string, string> {
  return {
    PORT: String(o.port),
    METRICS_PORT: "off",
    DATABASE_URL: o.databaseUrl,
    CLOUDFLARE_ZONE_ID: o.zoneId,
    CLOUDFLARE_API_TOKEN: o.token,
    CLOUDFLARE_API_BASE: o.apiBase,
    CLOUDFLARE_PURGE_PLAN: "pro",
    CLOUDFLARE_PURGE_REPEAT_MS: String(o.repeatMs),
  };
}
