import type { OriginPattern } from "../config/parse-cors.ts";

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export type OriginMatcher = (origin: string) => boolean;

/**
 * Exact origins are one Set lookup. A pattern `https://*.example.com` matches one or more DNS labels in
 * front of the domain: never the apex, an empty label, a trailing dot, another scheme or port, or a
 * look-alike such as `evil-example.com` (the suffix starts with the dot).
 */
export function compileOriginMatcher(exact: readonly string[], patterns: readonly OriginPattern[]): OriginMatcher {
  const exactSet = new Set(exact);
  if (patterns.length === 0) return (origin) => exactSet.has(origin);
  return (origin) => exactSet.has(origin) || patterns.some((pattern) => matchesPattern(origin, pattern));
}

function matchesPattern(origin: string, { prefix, suffix }: OriginPattern): boolean {
  if (origin.length <= prefix.length + suffix.length) return false;
  if (!origin.startsWith(prefix) || !origin.endsWith(suffix)) return false;
  const labels = origin.slice(prefix.length, origin.length - suffix.length);
  return labels.split(".").every((label) => LABEL.test(label));
}
