// The worker's variables: `[vars]` in wrangler.toml (every value a string, lists comma-separated) and its one
// secret. This table is the only place their names, defaults and meanings are written: the parsers read
// `withEdgeDefaults(vars)`, `npm run check` and the Snippet build read the same names, and
// `npm run gen:docs` writes docs/configuration.md from it.

import { rawValue, type VarDoc } from "../../shared/config/var-table.ts";
import { DEFAULT_ORIGIN_TIMEOUT_MS } from "../../shared/edge-fill-deadline.ts";

export const EDGE_VARS = [
  {
    name: "ORIGIN_URL",
    default: "http://127.0.0.1:8788",
    meaning: "Base URL of the origin cache service; item reads go to `ORIGIN_URL` + `/items/:id`. http or https, no query or credentials.",
  },
  {
    name: "ORIGIN_TIMEOUT_MS",
    default: String(DEFAULT_ORIGIN_TIMEOUT_MS),
    meaning:
      "Deadline for the origin's whole answer (body included), in milliseconds; past it the client gets 504. With purge on change, the origin's `CLOUDFLARE_PURGE_REPEAT_MS` must be at least this plus 1000.",
  },
  {
    name: "CORS_ALLOW_ORIGINS",
    default: "",
    meaning:
      "Exact origins (`https://app.example.com`), patterns `https://*.example.com` (one or more labels, never the apex), `null`, or `*`. Empty: CORS off.",
  },
  {
    name: "CORS_ALLOW_METHODS",
    default: "GET,HEAD",
    meaning: "Methods a preflight may ask for, byte-exact (`PATCH` is not `patch`); `GET`, `HEAD`, `POST` are always allowed, as in Fetch.",
  },
  {
    name: "CORS_ALLOW_HEADERS",
    default: "",
    meaning: "Request headers a preflight may ask for (case-insensitive); `*` = any but `authorization`, and a literal name when credentials are on.",
  },
  { name: "CORS_EXPOSE_HEADERS", default: "", meaning: "Response headers scripts may read." },
  { name: "CORS_ALLOW_CREDENTIALS", default: "false", meaning: "`true` lets browsers send cookies and read credentialed answers." },
  { name: "CORS_MAX_AGE", default: "", meaning: "Seconds a browser may cache a preflight answer (0-86400); empty omits the header." },
  { name: "CORS_ALLOW_PRIVATE_NETWORK", default: "false", meaning: "`true` answers Private Network Access preflights." },
  {
    name: "EDGE_CACHE_TTL",
    default: "60",
    meaning:
      "Seconds an edge-cached item is served without asking the origin (0-86400; 0 revalidates every read, a 304 with no body when unchanged). Without purging, also the longest a change takes to reach readers; with the origin purging changes (docs/purge.md), set 86400.",
  },
  {
    name: "EDGE_CACHE_NOT_FOUND_TTL",
    default: "0",
    meaning:
      "Seconds the edge answers an item's 404 without asking the origin (0-86400; 0 never caches a 404); once stale, the origin is asked again. With the origin purging changes (docs/purge.md), set 86400; without purging, a newly created item stays 404 at the edge for up to this long.",
  },
  {
    name: "ORIGIN_TOKEN",
    default: "",
    secret: true,
    meaning:
      "Sent in `x-origin-token`; the origin refuses requests without it when it has the same secret. `wrangler secret put ORIGIN_TOKEN`; locally in `.dev.vars`. `npm start` takes it from the environment or from the worker's local vars file (`.dev.vars`, the `.env` files, or the `--env-file` files when given) and gives it to both pieces (to wrangler dev as a `--var`, visible in `ps`), and refuses two different ones.",
  },
] as const satisfies readonly VarDoc[];

export type EdgeVarName = (typeof EDGE_VARS)[number]["name"];

/** The worker's vars and secret as wrangler delivers them: strings, any of them missing. */
export type EdgeVars = { readonly [name in EdgeVarName]?: string };

/** Every var, with the table's default where the deployment left it unset or empty. */
export type EdgeRawVars = { readonly [name in EdgeVarName]: string };

export function withEdgeDefaults(vars: EdgeVars): EdgeRawVars {
  const raw = {} as Record<EdgeVarName, string>;
  for (const doc of EDGE_VARS) raw[doc.name] = rawValue(doc, vars);
  return raw;
}
