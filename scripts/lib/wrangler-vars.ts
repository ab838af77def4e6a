import { readFileSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { parse } from "smol-toml";
import { EDGE_VARS, type EdgeVarName, type EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { parseEdgeConfig, type EdgeSpec } from "../../src/edge/config/parse-edge-config.ts";
import { ConfigError } from "../../src/shared/config/config-error.ts";
import { closestName } from "../../src/shared/config/near-name.ts";

/** The plain vars (not the secret: it never lives in wrangler.toml, and the Snippet bakes it only on request). */
const PLAIN_VARS = EDGE_VARS.filter((doc) => !("secret" in doc && doc.secret));
/** Their names: what may be set in [vars], with --var, or (for wrangler dev) in the local files. */
export const PLAIN_VAR_NAMES: ReadonlySet<string> = new Set(PLAIN_VARS.map((doc) => doc.name));

/**
 * The worker's vars from wrangler.toml: `[vars]`, or `[env.NAME.vars]` (environments do not inherit vars),
 * with `overrides` of the same names on top (the `--var NAME:VALUE` flags, as wrangler reads them: see
 * `varFlags`). A name there that is none of the worker's vars is refused: wrangler would deploy it and the
 * worker never read it, so a misspelt `CORS_ALLOW_ORIGIN` would pass for "CORS off".
 */
export function readWranglerVars(
  configPath: string,
  envName: string | undefined,
  overrides: Readonly<Record<string, string | undefined>> = {},
): EdgeVars {
  let text: string;
  try {
    text = readFileSync(configPath, "utf8");
  } catch (error) {
    throw new Error(`${configPath}: cannot read the wrangler configuration (${(error as Error).message}); pass --config PATH of an existing wrangler.toml, or run this where one is`);
  }
  const config = parse(text) as {
    vars?: Record<string, unknown>;
    env?: Record<string, { vars?: Record<string, unknown> }>;
  };
  let vars = config.vars ?? {};
  if (envName !== undefined) {
    const env = config.env?.[envName];
    if (!env) {
      const known = Object.keys(config.env ?? {});
      throw new Error(`${configPath} has no [env.${envName}]; known environments: ${known.join(", ") || "none"}.`);
    }
    vars = env.vars ?? {};
  }
  const table = envName === undefined ? "[vars]" : `[env.${envName}.vars]`;
  const known = [...PLAIN_VAR_NAMES];
  for (const name of Object.keys(vars)) {
    if (PLAIN_VAR_NAMES.has(name)) continue;
    const near = closestName(name, known);
    throw new Error(
      EDGE_VARS.some((doc) => doc.name === name)
        ? `${configPath} ${table}: ${name} is a secret, never a var (wrangler would deploy it in plain text); remove it, and use \`wrangler secret put ${name}\` (.dev.vars locally).`
        : `${configPath} ${table}: ${name} is not one of the worker's vars${near === undefined ? "" : ` (did you mean ${near}?)`}; the worker would never read it. Its vars: ${known.join(", ")}.`,
    );
  }
  const result: { [name in EdgeVarName]?: string } = {};
  for (const { name } of PLAIN_VARS) {
    const value = overrides[name] ?? vars[name];
    if (value === undefined) continue;
    if (typeof value !== "string") throw new Error(`${configPath}: ${name} must be a string (wrangler passes vars as strings); quote it.`);
    result[name] = value;
  }
  return result;
}

/**
 * The worker's configuration as a wrangler command with these arguments gets it (wranglerConfigPath, its
 * `[vars]` or `[env.NAME.vars]`, the `--var`s), with `beneath` under the `--var`s (what wrangler dev adds:
 * its local files, start's ORIGIN_URL; `beneathFrom` names the files), validated with the worker's own
 * rules. A refusal is an Error whose message starts with where the vars were read, as check prints it.
 */
export function checkedWorkerVars(
  argv: readonly string[],
  envName: string | undefined,
  beneath: Readonly<Record<string, string>> = {},
  beneathFrom?: string,
): { spec: EdgeSpec; where: string } {
  const table = envName ? `[env.${envName}]` : "[vars]";
  const withLocal = beneathFrom === undefined ? "" : ` with ${beneathFrom}`;
  let where = `wrangler.toml ${table}${withLocal}`;
  try {
    const configPath = wranglerConfigPath(argv);
    where = `${configPath} ${table}${withLocal}`;
    return { spec: parseEdgeConfig(readWranglerVars(configPath, envName, { ...beneath, ...varFlags(argv) })), where };
  } catch (error) {
    throw new Error(error instanceof ConfigError ? `${where}: ${error.message}` : error instanceof Error ? error.message : String(error));
  }
}

/**
 * `--var NAME:VALUE` from argv as wrangler reads it (repeatable, and one flag may take several pairs; the
 * value is everything after the first colon), so `npm run deploy -- --var …` checks what it deploys.
 */
export function varFlags(argv: readonly string[]): Record<string, string> {
  const pairs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith("--var=")) pairs.push(arg.slice("--var=".length));
    if (arg !== "--var") continue;
    const first = pairs.length;
    while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) pairs.push(argv[++i]!);
    if (pairs.length === first) throw new Error("--var needs NAME:VALUE, e.g. --var CORS_ALLOW_ORIGINS:https://app.example.com");
  }
  const vars: Record<string, string> = {};
  for (const pair of pairs) {
    const colon = pair.indexOf(":");
    const name = pair.slice(0, colon);
    if (colon <= 0) throw new Error(`--var ${pair}: write NAME:VALUE, e.g. --var CORS_ALLOW_ORIGINS:https://app.example.com`);
    if (!PLAIN_VAR_NAMES.has(name)) {
      throw new Error(
        EDGE_VARS.some((doc) => doc.name === name)
          ? `--var ${name}: a secret, never a var (wrangler would deploy it in plain text); use \`wrangler secret put ${name}\`.`
          : `--var ${name}: not one of the worker's vars (${[...PLAIN_VAR_NAMES].join(", ")}).`,
      );
    }
    vars[name] = pair.slice(colon + 1);
  }
  return vars;
}

/** A value flag of wrangler's (`--config PATH`, `-c PATH`, `--config=PATH`) from argv: every value given, in order. */
function wranglerFlags(argv: readonly string[], long: string, short?: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if ((arg === long || (short !== undefined && arg === short)) && i + 1 < argv.length) values.push(argv[++i]!);
    else if (arg.startsWith(`${long}=`)) values.push(arg.slice(long.length + 1));
  }
  return values;
}

/** The last value of a flag given (as parseScriptArgs keeps it), if any. */
const wranglerFlag = (argv: readonly string[], long: string, short?: string) => wranglerFlags(argv, long, short).at(-1);

/** `--env-file PATH` (repeatable), the files wrangler dev reads the worker's local vars from instead of .dev.vars. */
export function envFileFlags(argv: readonly string[]): string[] {
  return wranglerFlags(argv, "--env-file");
}

/**
 * The wrangler configuration a wrangler command with these arguments reads: `--config/-c PATH`, or
 * wrangler.toml, in `--cwd DIR` if given (wrangler runs as if started there). Relative to the working
 * directory when inside it (as messages show it), else absolute. Only TOML is read here.
 */
export function wranglerConfigPath(argv: readonly string[]): string {
  const path = resolve(wranglerFlag(argv, "--cwd") ?? ".", wranglerFlag(argv, "--config", "-c") ?? "wrangler.toml");
  if (/\.jsonc?$/.test(path)) throw new Error(`${path}: only a TOML wrangler configuration is checked here; write it as wrangler.toml`);
  const inside = relative(process.cwd(), path);
  return inside.startsWith("..") || isAbsolute(inside) ? path : inside;
}

/**
 * Of a `wrangler deploy` command line, the arguments that decide which vars it deploys (`--env`, `--var`,
 * `--config`, `--cwd`), for `npm run check` to check exactly those; the rest are wrangler's alone.
 */
export function varArguments(argv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (["--env", "-e", "--config", "-c", "--cwd"].includes(arg)) {
      kept.push(arg, ...(i + 1 < argv.length ? [argv[++i]!] : []));
    } else if (arg === "--var") {
      kept.push(arg);
      while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) kept.push(argv[++i]!);
    } else if (/^--(env|config|cwd|var)=/.test(arg)) {
      kept.push(arg);
    }
  }
  return kept;
}

/**
 * The wrangler environment a command with these arguments uses: `--env NAME` / `--env=NAME`, else
 * CLOUDFLARE_ENV, which wrangler reads when no --env is given (wrangler deploy and dev alike).
 */
export function envFlag(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  const flag = wranglerFlag(argv, "--env", "-e");
  // --env="" is wrangler's way to the top-level [vars] while CLOUDFLARE_ENV is set.
  if (flag !== undefined) return flag === "" ? undefined : flag;
  return env.CLOUDFLARE_ENV || undefined;
}

/** One flag a script takes. Its usage line is built from the same entry, so the help and the parser agree. */
export interface FlagSpec {
  /** `--name`. `--var` takes NAME:VALUE pairs as wrangler does; varFlags reads them. */
  flag: `--${string}`;
  short?: `-${string}`;
  /** The value's placeholder, e.g. "PATH"; absent for a switch. */
  value?: string;
  /** An empty value (`--env=""`) means something, and is no missing value. */
  mayBeEmpty?: true;
  doc: string;
}

/** An argument a script cannot take: exit 2 with the usage, having done nothing. */
export class UsageError extends Error {}

export interface ParsedArgs {
  /** `--help` or `-h` was given: print the usage and do nothing else. */
  help: boolean;
  /** Each value flag given, by its long name, with its last value. */
  values: Map<string, string>;
  /** Each switch given, by its long name. */
  switches: Set<string>;
}

/**
 * Parses a script's argv strictly against `flags`: `--flag VALUE`, `--flag=VALUE` (or the short form),
 * switches, `--var` pairs (validated by varFlags), `--help`/`-h`. Anything else throws a UsageError naming it
 * (`unknown argument --dryrun`, `--outfile needs a value`), so a typo never passes as a default.
 */
export function parseScriptArgs(argv: readonly string[], flags: readonly FlagSpec[]): ParsedArgs {
  const parsed: ParsedArgs = { help: false, values: new Map(), switches: new Set() };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") {
      parsed.help = true;
      continue;
    }
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const given = eq === -1 ? arg : arg.slice(0, eq);
    const spec = flags.find((f) => f.flag === given || f.short === given);
    if (!spec) throw new UsageError(`unknown argument ${arg}`);
    if (spec.flag === "--var") {
      // The pairs themselves (and a --var without one) are varFlags' to judge, with its own messages.
      if (eq === -1) while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) i++;
      continue;
    }
    if (spec.value === undefined) {
      if (eq !== -1) throw new UsageError(`${spec.flag} takes no value (got ${arg})`);
      parsed.switches.add(spec.flag);
      continue;
    }
    const value = eq !== -1 ? arg.slice(eq + 1) : argv[i + 1]?.startsWith("-") ? undefined : argv[++i];
    if (value === undefined || (value === "" && spec.mayBeEmpty !== true)) throw new UsageError(`${spec.flag} needs a value: ${spec.flag} ${spec.value}`);
    parsed.values.set(spec.flag, value);
  }
  return parsed;
}

/** `usage: COMMAND [-- OPTIONS]` and one line per flag, `--help` last. */
export function usageText(command: string, flags: readonly FlagSpec[]): string {
  const all: FlagSpec[] = [...flags, { flag: "--help", short: "-h", doc: "print this and do nothing else" }];
  const names = all.map((f) => [`${f.flag}${f.value ? ` ${f.value}` : ""}`, ...(f.short ? [`${f.short}${f.value ? ` ${f.value}` : ""}`] : [])].join(", "));
  const width = Math.max(...names.map((name) => name.length));
  return [`usage: ${command} [-- OPTIONS]`, ...all.map((f, i) => `  ${names[i]!.padEnd(width)}  ${f.doc}`)].join("\n");
}

/**
 * A script's arguments, or the process ends: `--help` prints the usage (exit 0); an unknown or incomplete
 * argument prints the usage and what was wrong (exit 2), before the script does anything.
 */
export function scriptArgsOrExit(script: string, argv: readonly string[], flags: readonly FlagSpec[]): ParsedArgs {
  const usage = usageText(`npm run ${script}`, flags);
  let parsed: ParsedArgs;
  try {
    parsed = parseScriptArgs(argv, flags);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${usage}\n\n${script}: ${error.message}`);
    process.exit(2);
  }
  if (parsed.help) {
    console.log(usage);
    process.exit(0);
  }
  return parsed;
}
