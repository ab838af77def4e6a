import type { CorsSpec } from "../config/parse-cors.ts";
import { compileOriginMatcher, type OriginMatcher } from "./origin-matcher.ts";

/** A CorsSpec turned into what each request needs: Set lookups and header values prepared once. */
export interface CorsPolicy {
  /** No origins configured: no CORS headers and no `Vary`, and every preflight fails. */
  readonly off: boolean;
  readonly anyOrigin: boolean;
  readonly allowsOrigin: OriginMatcher;
  readonly anyMethod: boolean;
  readonly methods: ReadonlySet<string>;
  readonly anyHeader: boolean;
  readonly headers: ReadonlySet<string>;
  /** `Access-Control-Expose-Headers` for an answer with an ETag ("" for none). */
  readonly exposeHeaders: string;
  /** The same without `etag`, for an answer that has none: the one exposed header the edge knows is absent (`*` stays). */
  readonly exposeWithoutEtag: string;
  readonly credentials: boolean;
  readonly maxAge: string;
  readonly privateNetwork: boolean;
}

export function compileCorsPolicy(spec: CorsSpec): CorsPolicy {
  return {
    off: !spec.anyOrigin && spec.exactOrigins.length === 0 && spec.originPatterns.length === 0,
    anyOrigin: spec.anyOrigin,
    allowsOrigin: spec.anyOrigin ? () => true : compileOriginMatcher(spec.exactOrigins, spec.originPatterns),
    anyMethod: spec.anyMethod,
    methods: new Set(spec.methods),
    anyHeader: spec.anyHeader,
    headers: new Set(spec.headers),
    exposeHeaders: spec.exposeHeaders,
    exposeWithoutEtag: spec.exposeHeaders.split(",").filter((name) => name !== "etag").join(","),
    credentials: spec.credentials,
    maxAge: spec.maxAge,
    privateNetwork: spec.privateNetwork,
  };
}
