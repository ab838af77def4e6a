import type { OriginUsage } from "./origin-usage.ts";

/**
 * Writes one Analytics Engine data point per edge request once its origin body has streamed:
 * blob1 = request class, double1 = origin status (0 = not asked), double2 = origin head bytes,
 * double3 = origin body bytes. docs/egress.md ("Measuring egress in production") has the SQL that turns these into bytes per request.
 */
export function recordUsage(dataset: AnalyticsEngineDataset, usage: OriginUsage, waitUntil: (p: Promise<unknown>) => void) {
  waitUntil(
    usage.bodyDone.then(() =>
      dataset.writeDataPoint({
        blobs: [usage.requestClass],
        doubles: [usage.originStatus, usage.headBytes, usage.bodyBytes],
        indexes: [usage.requestClass],
      }),
    ),
  );
}
