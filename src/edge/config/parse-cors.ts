import type { ConfigProblem } from "../../shared/config/config-error.ts";
import { readBoolean, readList } from "../../shared/config/grammar.ts";
import { isHttpToken } from "../../shared/http-token.ts";
import type { EdgeRawVars } from "./edge-vars.ts";
import { isPublicSuffix, publicSuffixBeneath } from "./public-suffix.ts";

/** `https://*.example.com` compiled: an origin matches when it is `prefix` + one or more DNS labels + `suffix`. */
export interface OriginPattern {
  prefix: string; // "https://"
  suffix: string; // ".example.com" or ".example.com:8443"
}

/**
 * The CORS policy as plain data: validated, normalised, JSON-serialisable (the Snippet build bakes it into
 * its bundle). `compileCorsPolicy` turns it into the lookup structures used per request.
 */
export interface CorsSpec {
  /** `*`: every origin, answered with `Access-Control-Allow-Origin: *` and no `Vary`. */
  anyOrigin: boolean;
  exactOrigins: string[];
  originPatterns: OriginPattern[];
  /** `*` in CORS_ALLOW_METHODS without credentials: every method a preflight asks for. */
  anyMethod: boolean;
  methods: string[];
  /** `*` in CORS_ALLOW_HEADERS without credentials: every header except `authorization`. */
  anyHeader: boolean;
  /** Lowercase names. With credentials a configured `*` stays here as a literal name, as browsers read it. */
  headers: string[];
  /** The `Access-Control-Expose-Headers` value to send, or "" for none. */
  exposeHeaders: string;
  credentials: boolean;
  /** The `Access-Control-Max-Age` value to send, or "" to omit it. */
  maxAge: string;
  privateNetwork: boolean;
}

// Browsers cap preflight caching (Firefox at 24 h, Chromium at 2 h); a larger value only misleads.
const MAX_AGE_LIMIT = 86400;
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
// Fetch normalises these to uppercase before sending (https://fetch.spec.whatwg.org/#concept-method-normalize).
const NORMALISED_METHODS = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);
// The IANA HTTP Method Registry (https://www.iana.org/assignments/http-methods), QUERY included: a method
// outside it is a typo far more often than a real extension, and a typo here refuses real preflights.
// Compared in upper case: `patch` is a registered name that Fetch sends as written, not a typo.
const REGISTERED_METHODS = new Set([
  "ACL", "BASELINE-CONTROL", "BIND", "CHECKIN", "CHECKOUT", "CONNECT", "COPY", "DELETE", "GET", "HEAD", "LABEL",
  "LINK", "LOCK", "MERGE", "MKACTIVITY", "MKCALENDAR", "MKCOL", "MKREDIRECTREF", "MKWORKSPACE", "MOVE", "OPTIONS",
  "ORDERPATCH", "PATCH", "POST", "PRI", "PROPFIND", "PROPPATCH", "PUT", "QUERY", "REBIND", "REPORT", "SEARCH",
  "TRACE", "UNBIND", "UNCHECKOUT", "UNLINK", "UNLOCK", "UPDATE", "UPDATEREDIRECTREF", "VERSION-CONTROL",
]);
const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443" };
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function hostIsValid(host: string): boolean {
  if (host.startsWith("[") && host.endsWith("]")) return /^\[[0-9a-f:.]+\]$/.test(host);
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) return host.split(".").every((n) => Number(n) <= 255);
  return host.length <= 253 && host.split(".").every((label) => LABEL.test(label));
}

/**
 * What `origin` becomes once everything a serialised Origin never has is gone at once (uppercase, a path,
 * query or fragment, a default port), so that a refusal's suggestion is accepted as it stands, not refused
 * for the next problem in turn.
 */
function tidied(origin: string): string {
  let s = origin.toLowerCase();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//.exec(s);
  if (!scheme) return s;
  const rest = s.slice(scheme[0].length).search(/[/?#]/);
  if (rest !== -1) s = s.slice(0, scheme[0].length + rest);
  const port = /:(\d+)$/.exec(s);
  if (port && DEFAULT_PORTS[`${scheme[1]}:`] === port[1]) s = s.slice(0, -port[0].length);
  return s;
}

/**
 * Checks one configured origin and says precisely why it could never equal a browser's serialised `Origin`
 * (https://html.spec.whatwg.org/#ascii-serialisation-of-an-origin): scheme://host[:port], lowercase, no
 * path, no default port.
 */
function originProblem(origin: string): string | undefined {
  const quoted = `"${origin}"`;
  if (origin !== origin.toLowerCase()) {
    return `${quoted} has uppercase letters; browsers send origins in lowercase, so write "${tidied(origin)}".`;
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//.exec(origin);
  if (!scheme) return `${quoted} is not an origin; write scheme://host[:port], e.g. "https://app.example.com".`;
  if (scheme[1] !== "http" && scheme[1] !== "https") {
    return `${quoted} uses the scheme "${scheme[1]}"; only http and https origins are supported.`;
  }
  const rest = origin.slice(scheme[0].length);
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd === -1 ? "" : rest.slice(authorityEnd);
  const bare = `${scheme[0]}${authority}`;
  if (tail === "/") return `${quoted} has a trailing slash; an Origin never does, so write "${tidied(bare)}".`;
  if (tail !== "") return `${quoted} has a path, query or fragment; an Origin is only scheme://host[:port], so write "${tidied(bare)}".`;
  if (authority.includes("@")) return `${quoted} has user info; an Origin never does.`;
  const portMatch = /^(.*?)(?::(\d*))?$/.exec(authority);
  const host = portMatch?.[1] ?? "";
  const port = portMatch?.[2];
  if (port !== undefined) {
    if (port === "" || Number(port) > 65535 || port.startsWith("0")) return `${quoted} has an invalid port.`;
    if (DEFAULT_PORTS[`${scheme[1]}:`] === port) {
      return `${quoted} names the default port ${port}; browsers omit it, so write "${scheme[0]}${host}".`;
    }
  }
  if (host.includes("*")) {
    return `${quoted} has a wildcard that is not the whole first label; write "${scheme[0]}*.example.com" to allow every subdomain.`;
  }
  if (!hostIsValid(host)) return `${quoted} has an invalid host "${host}".`;
  return undefined;
}

function parseOrigins(vars: EdgeRawVars, credentials: boolean, problems: ConfigProblem[]) {
  const variable = "CORS_ALLOW_ORIGINS";
  const items = readList(variable, vars.CORS_ALLOW_ORIGINS, problems);
  const exactOrigins: string[] = [];
  const originPatterns: OriginPattern[] = [];
  let anyOrigin = false;
  for (const item of items) {
    if (item === "*") {
      anyOrigin = true;
      if (items.length > 1) {
        problems.push({ variable, message: `"*" already allows every origin; remove the other origins, or remove "*".` });
      }
      if (credentials) {
        problems.push({
          variable,
          message: `"*" cannot be combined with CORS_ALLOW_CREDENTIALS=true (browsers refuse it, and reflecting every origin with credentials lets any site read users' data); list the origins you trust.`,
        });
      }
      continue;
    }
    if (item === "null") {
      if (credentials) {
        problems.push({
          variable,
          message: `"null" cannot be combined with CORS_ALLOW_CREDENTIALS=true: sandboxed iframes and file: pages of any site send "null", so it would hand credentialed reads to all of them.`,
        });
      }
      exactOrigins.push(item);
      continue;
    }
    const wildcard = /^(https?:\/\/)\*\.(.+)$/.exec(item);
    if (wildcard) {
      const [, prefix = "", domainAndPort = ""] = wildcard;
      // Checked as the origin it would match one label deeper; the message's quotes are put back on the pattern.
      const problem = originProblem(`${prefix}${domainAndPort}`);
      if (problem) {
        problems.push({ variable, message: problem.replaceAll(`"${prefix}`, `"${prefix}*.`) });
        continue;
      }
      const domain = domainAndPort.replace(/:\d+$/, "");
      if (credentials && isPublicSuffix(domain)) {
        problems.push({
          variable,
          message: `"${item}" puts a wildcard over the public suffix "${domain}", so anyone can register a matching origin; with CORS_ALLOW_CREDENTIALS=true that hands them users' data. Name your own domain, e.g. "${prefix}*.yourcompany.${domain}".`,
        });
        continue;
      }
      const beneath = credentials ? publicSuffixBeneath(domain) : undefined;
      if (beneath !== undefined) {
        problems.push({
          variable,
          message: `"${item}" also matches origins under the public suffix "${beneath.replace(/^\*\./, "")}", which anyone can register; with CORS_ALLOW_CREDENTIALS=true that hands them users' data. List the exact origins you own instead.`,
        });
        continue;
      }
      originPatterns.push({ prefix, suffix: `.${domainAndPort}` });
      continue;
    }
    const problem = originProblem(item);
    if (problem) problems.push({ variable, message: problem });
    else exactOrigins.push(item);
  }
  return { anyOrigin, exactOrigins, originPatterns };
}

function parseMethods(vars: EdgeRawVars, credentials: boolean, problems: ConfigProblem[]) {
  const variable = "CORS_ALLOW_METHODS";
  const items = readList(variable, vars.CORS_ALLOW_METHODS, problems);
  let anyMethod = false;
  const methods: string[] = [];
  for (const item of items) {
    if (item === "*") {
      if (credentials) {
        problems.push({
          variable,
          message: `"*" means a literal method named "*" when CORS_ALLOW_CREDENTIALS=true, which is never what was meant; list the methods, e.g. "GET,HEAD,PUT".`,
        });
      } else if (items.length > 1) {
        problems.push({ variable, message: `"*" already allows every method; remove the other methods, or remove "*".` });
      }
      anyMethod = true;
      continue;
    }
    if (!isHttpToken(item)) {
      problems.push({ variable, message: `"${item}" is not a valid method name (an HTTP token).` });
    } else if (FORBIDDEN_METHODS.has(item.toUpperCase())) {
      problems.push({ variable, message: `"${item}" is a forbidden method: browsers never send it cross-origin; remove it.` });
    } else if (!REGISTERED_METHODS.has(item.toUpperCase())) {
      problems.push({
        variable,
        message: `"${item}" is not an HTTP method (the IANA HTTP Method Registry has no such name); check the spelling, e.g. "PATCH".`,
      });
    } else if (item !== item.toUpperCase() && NORMALISED_METHODS.has(item.toUpperCase())) {
      problems.push({
        variable,
        message: `"${item}" never matches: browsers normalise it and send "${item.toUpperCase()}"; write "${item.toUpperCase()}".`,
      });
    } else {
      methods.push(item);
    }
  }
  return { anyMethod: anyMethod && !credentials, methods };
}

function parseHeaderNames(variable: string, raw: string | undefined, problems: ConfigProblem[]): string[] {
  const names: string[] = [];
  /** Each name's first spelling, and every spelling seen (one written again the same way readList reports). */
  const first = new Map<string, string>();
  const spellings = new Set<string>();
  for (const item of readList(variable, raw, problems)) {
    if (item !== "*" && !isHttpToken(item)) {
      problems.push({ variable, message: `"${item}" is not a valid header name (an HTTP token).` });
      continue;
    }
    const name = item.toLowerCase();
    const earlier = first.get(name);
    if (earlier === undefined) {
      first.set(name, item);
      names.push(name);
    } else if (!spellings.has(item)) {
      problems.push({ variable, message: `"${earlier}" and "${item}" are the same header (header names ignore case); list it once.` });
    }
    spellings.add(item);
  }
  return names;
}

function parseMaxAge(raw: string, problems: ConfigProblem[]): string {
  const variable = "CORS_MAX_AGE";
  if (raw.trim() === "") return "";
  if (!/^\d+$/.test(raw)) {
    problems.push({ variable, message: `"${raw}" is not a whole number of seconds; write e.g. "7200", or leave it empty to omit the header.` });
    return "";
  }
  if (Number(raw) > MAX_AGE_LIMIT) {
    problems.push({ variable, message: `${raw} exceeds ${MAX_AGE_LIMIT}, the most any browser honours; write at most ${MAX_AGE_LIMIT}.` });
    return "";
  }
  return String(Number(raw));
}

/** Validates the CORS_* vars; every problem found is appended to `problems`. */
export function parseCors(vars: EdgeRawVars, problems: ConfigProblem[]): CorsSpec {
  const credentials = readBoolean("CORS_ALLOW_CREDENTIALS", vars.CORS_ALLOW_CREDENTIALS, problems);
  const privateNetwork = readBoolean("CORS_ALLOW_PRIVATE_NETWORK", vars.CORS_ALLOW_PRIVATE_NETWORK, problems);
  const origins = parseOrigins(vars, credentials, problems);
  const methods = parseMethods(vars, credentials, problems);

  const allowHeaders = parseHeaderNames("CORS_ALLOW_HEADERS", vars.CORS_ALLOW_HEADERS, problems);
  const anyHeader = !credentials && allowHeaders.includes("*");
  const headers = anyHeader ? allowHeaders.filter((name) => name !== "*") : allowHeaders;

  const expose = parseHeaderNames("CORS_EXPOSE_HEADERS", vars.CORS_EXPOSE_HEADERS, problems);
  if (expose.includes("*") && credentials) {
    problems.push({
      variable: "CORS_EXPOSE_HEADERS",
      message: `"*" means a literal header named "*" when CORS_ALLOW_CREDENTIALS=true, so nothing would be exposed; list the headers, e.g. "etag".`,
    });
  }
  if (expose.includes("*") && expose.length > 1) {
    problems.push({ variable: "CORS_EXPOSE_HEADERS", message: `"*" already exposes every header; remove the other names, or remove "*".` });
  }

  return {
    ...origins,
    ...methods,
    anyHeader,
    headers,
    exposeHeaders: expose.join(","),
    credentials,
    maxAge: parseMaxAge(vars.CORS_MAX_AGE, problems),
    privateNetwork,
  };
}
