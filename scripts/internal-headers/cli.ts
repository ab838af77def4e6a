// The generator's command line: arguments → options, the files read and written, `--check`, exit codes and
// what is printed. Everything it needs arrives as parameters; the list → model → code steps live beside it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { generateModule } from "./emit-module.ts";
import { ListError, parseList } from "./model.ts";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");
export const DEFAULT_LIST = resolve(REPO_ROOT, "src/edge/internal-headers.txt");
export const DEFAULT_OUT = resolve(REPO_ROOT, "src/edge/headers/internal-headers.generated.ts");

const USAGE = "[--check] [--list FILE] [--out FILE]";

export interface CliOptions {
  /** Compare instead of writing: exit 1 if the output is stale or missing. */
  readonly check: boolean;
  readonly listPath: string;
  readonly outPath: string;
}

/** A path as messages and the banner show it: relative to the repository when inside it, with `/`. */
function shown(path: string): string {
  const rel = relative(REPO_ROOT, path);
  const inside = rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
  return (inside ? rel : path).split(sep).join("/");
}

/** Reads, validates and compiles `listPath`; returns the module text. Throws ListError. */
export function compileFile(listPath: string): string {
  const file = shown(listPath);
  return generateModule(parseList(readFileSync(listPath, "utf8"), file), file);
}

/** The options for `argv`, or the exit code when there is nothing to run (help, a bad argument). */
export function parseArgs(argv: readonly string[]): CliOptions | number {
  let check = false;
  let listPath = DEFAULT_LIST;
  let outPath = DEFAULT_OUT;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--check") check = true;
    else if (a === "--list" && argv[i + 1] !== undefined) listPath = resolve(argv[++i] as string);
    else if (a === "--out" && argv[i + 1] !== undefined) outPath = resolve(argv[++i] as string);
    else if (a === "--help" || a === "-h") {
      console.log(`usage: node scripts/gen-internal-headers.ts ${USAGE}`);
      return 0;
    } else {
      console.error(`gen-internal-headers: unknown argument ${JSON.stringify(a)} (usage: ${USAGE})`);
      return 2;
    }
  }
  return { check, listPath, outPath };
}

/** Compiles the list and writes (or, with `check`, compares) the output; returns the exit code. */
export function run({ check, listPath, outPath }: CliOptions): number {
  let text: string;
  try {
    text = compileFile(listPath);
  } catch (err) {
    if (err instanceof ListError) {
      console.error(`gen-internal-headers: ${shown(listPath)} is invalid:`);
      for (const p of err.problems) console.error(`  ${p}`);
      return 1;
    }
    throw err;
  }

  const current = existsSync(outPath) ? readFileSync(outPath, "utf8") : undefined;
  if (check) {
    if (current === text) return 0;
    console.error(
      `gen-internal-headers: ${shown(outPath)} is ${current === undefined ? "missing" : "stale"} ` +
        `(it does not match ${shown(listPath)}): run \`npm run gen\` and commit the result`,
    );
    return 1;
  }
  if (current !== text) {
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, text);
    console.log(`gen-internal-headers: wrote ${shown(outPath)}`);
  }
  return 0;
}

/** Runs the CLI; returns the exit code. */
export function main(argv: readonly string[]): number {
  const options = parseArgs(argv);
  return typeof options === "number" ? options : run(options);
}
