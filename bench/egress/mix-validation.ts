// What a mix file may say: its fields, their ranges and defaults (bench/egress/README.md documents them),
// checked all at once with messages that name the field's path and, where it helps, the fix.

export interface Mix {
  description: string;
  seed: number;
  requests: number;
  warmupRequests: number;
  concurrency: number;
  ratePerSecond: number;
  items: { count: number; zipfExponent: number };
  missingIds: { count: number; zipfExponent: number };
  clients: { count: number; revalidatingShare: number; revisitShare: number };
  shares: { preflight: number; missing: number; other: number };
  origins: Array<{ origin: string | null; weight: number }>;
  preflight: { requestMethod: string; requestHeaders: string };
  writes: { perThousandRequests: number };
  otherPaths: string[];
  worker: { vars: Record<string, string> };
}

type Obj = Record<string, unknown>;

const WORKER_VAR = /^[A-Z][A-Z0-9_]*$/;
const SET_BY_METER = new Set(["ORIGIN_URL", "ORIGIN_TOKEN"]);

/** The mix a parsed document describes, defaults filled in; every problem is pushed to `problems`. */
export function validateMix(doc: unknown, problems: string[]): Mix | undefined {
  if (!isObj(doc)) {
    problems.push("the top level must be a JSON object");
    return undefined;
  }
  const top = fields(doc, "", problems, [
    "description",
    "seed",
    "requests",
    "warmupRequests",
    "concurrency",
    "ratePerSecond",
    "items",
    "missingIds",
    "clients",
    "shares",
    "origins",
    "preflight",
    "writes",
    "otherPaths",
    "worker",
  ]);
  const description = str(top, "description", "", problems, "");
  const seed = int(top, "seed", "", problems, 0, 2 ** 32 - 1, 1);
  const requests = int(top, "requests", "", problems, 1, 10_000_000, 30_000);
  const warmupRequests = int(top, "warmupRequests", "", problems, 0, 10_000_000, 0);
  const concurrency = int(top, "concurrency", "", problems, 1, 1024, 16);
  const ratePerSecond = num(top, "ratePerSecond", "", problems, 0, 1_000_000, 250);

  const itemsObj = obj(top, "items", problems);
  const items = {
    count: int(fields(itemsObj, "items.", problems, ["count", "zipfExponent"]), "count", "items.", problems, 1, 5_000_000, 10_000),
    zipfExponent: num(itemsObj, "zipfExponent", "items.", problems, 0, 5, 0.99),
  };
  const missingObj = obj(top, "missingIds", problems);
  fields(missingObj, "missingIds.", problems, ["count", "zipfExponent"]);
  const missingIds = {
    count: int(missingObj, "count", "missingIds.", problems, 1, 5_000_000, 1000),
    zipfExponent: num(missingObj, "zipfExponent", "missingIds.", problems, 0, 5, 0.8),
  };
  const clientsObj = obj(top, "clients", problems);
  fields(clientsObj, "clients.", problems, ["count", "revalidatingShare", "revisitShare"]);
  const clients = {
    count: int(clientsObj, "count", "clients.", problems, 1, 10_000_000, 2000),
    revalidatingShare: num(clientsObj, "revalidatingShare", "clients.", problems, 0, 1, 0.5),
    revisitShare: num(clientsObj, "revisitShare", "clients.", problems, 0, 1, 0.3),
  };
  const sharesObj = obj(top, "shares", problems);
  fields(sharesObj, "shares.", problems, ["preflight", "missing", "other"]);
  const shares = {
    preflight: num(sharesObj, "preflight", "shares.", problems, 0, 1, 0.15),
    missing: num(sharesObj, "missing", "shares.", problems, 0, 1, 0.02),
    other: num(sharesObj, "other", "shares.", problems, 0, 1, 0.01),
  };
  if (shares.preflight + shares.missing + shares.other > 1) {
    problems.push(
      `shares: preflight + missing + other = ${Number((shares.preflight + shares.missing + shares.other).toFixed(6))} is more than 1 ` +
        "(item reads get the rest: keep the sum at most 1)",
    );
  }

  const origins: Mix["origins"] = [];
  const rawOrigins = top["origins"];
  if (rawOrigins === undefined) {
    origins.push({ origin: "https://app.example.com", weight: 1 });
  } else if (!Array.isArray(rawOrigins) || rawOrigins.length === 0) {
    problems.push('origins must be a non-empty array of { "origin": "https://…" or null, "weight": number }');
  } else {
    rawOrigins.forEach((entry: unknown, i) => {
      const where = `origins[${i}].`;
      if (!isObj(entry)) {
        problems.push(`origins[${i}] must be an object like { "origin": "https://app.example.com", "weight": 80 }`);
        return;
      }
      fields(entry, where, problems, ["origin", "weight"]);
      const origin = entry["origin"];
      if (origin !== null && (typeof origin !== "string" || !/^https?:\/\/[^/\s]+$/.test(origin))) {
        problems.push(`${where}origin must be a scheme://host[:port] origin with no path, or null (a client that sends no Origin)`);
      }
      const weight = num(entry, "weight", where, problems, 0, 1e9, 1);
      origins.push({ origin: typeof origin === "string" ? origin : null, weight });
    });
    if (origins.every((o) => o.weight === 0)) problems.push("origins: at least one weight must be above 0");
  }

  const preflightObj = obj(top, "preflight", problems);
  fields(preflightObj, "preflight.", problems, ["requestMethod", "requestHeaders"]);
  const preflight = {
    requestMethod: str(preflightObj, "requestMethod", "preflight.", problems, "GET"),
    requestHeaders: str(preflightObj, "requestHeaders", "preflight.", problems, ""),
  };
  if (!/^[A-Z]+$/.test(preflight.requestMethod)) problems.push("preflight.requestMethod must be an upper-case method such as GET");
  if (shares.preflight > 0 && origins.every((o) => o.origin === null || o.weight === 0)) {
    problems.push("shares.preflight is above 0 but no origin sends an Origin header: preflights come from browsers (add an origin)");
  }

  const writesObj = obj(top, "writes", problems);
  fields(writesObj, "writes.", problems, ["perThousandRequests"]);
  const writes = { perThousandRequests: num(writesObj, "perThousandRequests", "writes.", problems, 0, 1000, 2) };

  const otherPaths: string[] = [];
  const rawOther = top["otherPaths"];
  if (rawOther === undefined) {
    otherPaths.push("/", "/favicon.ico");
  } else if (!Array.isArray(rawOther) || rawOther.length === 0 || !rawOther.every((p) => typeof p === "string" && p.startsWith("/"))) {
    problems.push('otherPaths must be a non-empty array of paths starting with "/"');
  } else {
    otherPaths.push(...(rawOther as string[]));
  }

  const workerObj = obj(top, "worker", problems);
  fields(workerObj, "worker.", problems, ["vars"]);
  const vars: Record<string, string> = {};
  const rawVars = workerObj["vars"];
  if (rawVars !== undefined) {
    if (!isObj(rawVars)) {
      problems.push("worker.vars must be an object of NAME: \"string value\"");
    } else {
      for (const [name, value] of Object.entries(rawVars)) {
        if (name.startsWith("$")) continue;
        if (!WORKER_VAR.test(name)) problems.push(`worker.vars.${name}: var names are UPPER_SNAKE_CASE`);
        else if (SET_BY_METER.has(name)) problems.push(`worker.vars.${name}: the meter sets ${name} itself (the relay and a run token); remove it`);
        else if (typeof value !== "string") problems.push(`worker.vars.${name} must be a string (wrangler vars are strings): write "${String(value)}"`);
        else vars[name] = value;
      }
    }
  }

  return {
    description,
    seed,
    requests,
    warmupRequests,
    concurrency,
    ratePerSecond,
    items,
    missingIds,
    clients,
    shares,
    origins,
    preflight,
    writes,
    otherPaths,
    worker: { vars },
  };
}

function isObj(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reports keys that are not in `known` (typos); keys starting with `$` are comments. */
function fields(o: Obj, where: string, problems: string[], known: string[]): Obj {
  for (const key of Object.keys(o)) {
    if (key.startsWith("$") || known.includes(key)) continue;
    const near = known.find((k) => k.toLowerCase() === key.toLowerCase());
    problems.push(`${where}${key} is not a known field${near ? ` (did you mean ${near}?)` : ""}; known: ${known.join(", ")}`);
  }
  return o;
}

function obj(parent: Obj, key: string, problems: string[]): Obj {
  const value = parent[key];
  if (value === undefined) return {};
  if (isObj(value)) return value;
  problems.push(`${key} must be an object`);
  return {};
}

function num(o: Obj, key: string, where: string, problems: string[], min: number, max: number, fallback: number): number {
  const value = o[key];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    problems.push(`${where}${key} must be a number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return fallback;
  }
  return value;
}

function int(o: Obj, key: string, where: string, problems: string[], min: number, max: number, fallback: number): number {
  const value = o[key];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    problems.push(`${where}${key} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return fallback;
  }
  return value;
}

function str(o: Obj, key: string, where: string, problems: string[], fallback: string): string {
  const value = o[key];
  if (value === undefined) return fallback;
  if (typeof value !== "string") {
    problems.push(`${where}${key} must be a string`);
    return fallback;
  }
  return value;
}
