// The byte budget of ../shared/DESIGN.md as cases: checked in workerd by test/edge/byte-budget.test.ts and
// measured on the wire against `wrangler dev` by scripts/measure-cors-bytes.ts. Pure data, no I/O.

/** The allow-list policy the budget is stated for. */
export const BUDGET_VARS = {
  CORS_ALLOW_ORIGINS: "https://app.example.com,https://*.preview.example.com",
  CORS_ALLOW_METHODS: "GET,HEAD,PUT",
  CORS_ALLOW_HEADERS: "content-type,x-request-id",
} as const;

export interface BudgetCase {
  name: string;
  method: "GET" | "OPTIONS";
  headers: Record<string, string>;
  /** HTTP/1.1 wire bytes of Access-Control-* and Vary header lines, `Name: value\r\n` each. */
  budget: number;
  /** What ingress-nginx `enable-cors` sends for the same request, for comparison. */
  ingressNginx: number;
}

const APP = "https://app.example.com";
const INGRESS_NGINX_EVERY_RESPONSE = 314;

export const BUDGET_CASES: readonly BudgetCase[] = [
  {
    name: "allowed preflight, PUT + two requested headers",
    method: "OPTIONS",
    headers: { origin: APP, "access-control-request-method": "PUT", "access-control-request-headers": "content-type,x-request-id" },
    budget: 146,
    ingressNginx: INGRESS_NGINX_EVERY_RESPONSE,
  },
  {
    name: "failed preflight (disallowed origin)",
    method: "OPTIONS",
    headers: { origin: "https://evil.example.net", "access-control-request-method": "PUT" },
    budget: 0,
    ingressNginx: INGRESS_NGINX_EVERY_RESPONSE,
  },
  { name: "GET from an allowed origin", method: "GET", headers: { origin: APP }, budget: 68, ingressNginx: INGRESS_NGINX_EVERY_RESPONSE },
  { name: "GET with no Origin", method: "GET", headers: {}, budget: 14, ingressNginx: INGRESS_NGINX_EVERY_RESPONSE },
  {
    name: "GET from a disallowed origin",
    method: "GET",
    headers: { origin: "https://evil.example.net" },
    budget: 14,
    ingressNginx: INGRESS_NGINX_EVERY_RESPONSE,
  },
];

/** Wire bytes of the CORS header lines among `[name, value]` pairs. */
export function corsWireBytes(headers: Iterable<readonly [string, string]>): number {
  let bytes = 0;
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower.startsWith("access-control-") || lower === "vary") bytes += name.length + 2 + value.length + 2;
  }
  return bytes;
}
