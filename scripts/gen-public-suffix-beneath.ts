// Compiles the Public Suffix List into src/edge/config/public-suffix-beneath.generated.ts: every domain
// that has a public suffix strictly beneath it (amazonaws.com: s3.amazonaws.com and hundreds more), with
// the plainest such suffix as the example an error message can name. The worker refuses a credentialed
// `https://*.amazonaws.com` with it (src/edge/config/public-suffix.ts); tldts's public API answers "is
// this domain a public suffix", but no public API answers "is there one beneath it", and tldts's own trie
// is private, so the table is built here, from the list itself, and committed.
//
//   node scripts/gen-public-suffix-beneath.ts                 write the table (only if its bytes change)
//   node scripts/gen-public-suffix-beneath.ts --check         CI: regenerate, compare byte for byte, write nothing
//   node scripts/gen-public-suffix-beneath.ts --list FILE     read another copy of the list instead
//   node scripts/gen-public-suffix-beneath.ts --out FILE      write or check another table (tests)
//
// The list: by default the copy the PyPI package `publicsuffixlist` ships (its wheel holds
// publicsuffixlist/public_suffix_list.dat; the package exists to ship the list and is released about
// weekly, versioned by the list's date: 1.1.2.YYYYMMDD), at the exact version PSL_VERSION below. The
// generator fetches it with
// `python3 -m pip download --no-deps --only-binary=:all: --dest <tempdir> publicsuffixlist==<PSL_VERSION>`
// (pip as the machine configures it: index, proxy and find-links settings apply), reads the list out of the
// wheel with Python's zipfile, and removes the temporary directory. So generating and --check need python3
// with pip, and PyPI reachable; without them they fail, saying so (no silent pass). `--list FILE` reads any
// other copy instead (e.g. a download of https://publicsuffix.org/list/public_suffix_list.dat) for trying a
// list out; a table made that way records the file as its source and does not pass the default --check.
// Nothing from the list is kept in this repository but the generated table, whose header records the
// source (`PyPI publicsuffixlist==<version>`), the list's VERSION and COMMIT lines (when its header has
// them) and its sha256.
//
// Freshness: the table is as fresh as the pinned release (its header gives the list's VERSION date). A
// suffix registered since is not in the table, so a credentialed wildcard over a domain that only gained a
// public suffix beneath it later is not refused; one whose suffixes were removed since may still be.
// Whether a domain is itself a public suffix (`*.github.io`) is not decided here: tldts answers that from
// its own copy of the list.
// To refresh: set PSL_VERSION to a newer release of publicsuffixlist on PyPI
// (`python3 -m pip index versions publicsuffixlist` lists them), run this script (`npm run gen:psl`) and
// commit the table, and only the table: the list stays out of the repository.
//
// --check: regenerates from the pinned release (or from `--list FILE`) and compares with the table byte for
// byte; exit 1, naming the command that fixes it, when they differ (the pin was bumped without
// regenerating, the generator changed, or the table was edited), and exit 1 when the list cannot be had.
//
// Format (https://github.com/publicsuffix/list/wiki/Format): one rule per line, `//` comments, `*.x`
// wildcards, `!x` exceptions, ICANN and private sections (both count here, as tldts's
// allowPrivateDomains does), labels in Unicode (stored here in their ASCII form, as an Origin carries them).
// The output is a pure function of the list's text and the source line recorded: no timestamps, stable
// ordering.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { domainToASCII, pathToFileURL } from "node:url";

const REPO_ROOT = resolve(import.meta.dirname, "..");
/** The PyPI package that ships the list, and the one release of it the committed table is built from. */
export const PSL_PACKAGE = "publicsuffixlist";
export const PSL_VERSION = "1.1.2.20261023";
/** Where the list sits in the package's wheel. */
export const PSL_MEMBER = "publicsuffixlist/public_suffix_list.dat";
export const DEFAULT_OUT = resolve(REPO_ROOT, "src/edge/config/public-suffix-beneath.generated.ts");
const DOWNLOAD = "https://publicsuffix.org/list/public_suffix_list.dat";

/** How a table's header names the pinned release: `PyPI publicsuffixlist==<PSL_VERSION>`. */
export function pypiSource(version: string = PSL_VERSION): string {
  return `PyPI ${PSL_PACKAGE}==${version}`;
}

/** A rule of the list in ASCII form (`s3.amazonaws.com`, `*.compute.amazonaws.com`), with its line. */
export interface Rule {
  readonly rule: string;
  readonly line: number;
}

/**
 * The rules that make a name a public suffix (exceptions only ever unmake one, so they add nothing here).
 * Throws with file:line for a rule that has no ASCII form.
 */
export function readRules(text: string, file: string): Rule[] {
  const rules: Rule[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    // "Each line is only read up to the first whitespace"; comments start with `//`.
    const token = (lines[i] ?? "").trim().split(/\s/)[0] ?? "";
    if (token === "" || token.startsWith("//") || token.startsWith("!")) continue;
    const wildcard = token.startsWith("*.");
    const ascii = domainToASCII(wildcard ? token.slice(2) : token);
    if (ascii === "" || ascii.includes("*")) throw new Error(`${file}:${i + 1}: "${token}" is not a rule this generator understands`);
    rules.push({ rule: wildcard ? `*.${ascii}` : ascii, line: i + 1 });
  }
  return rules;
}

/** Fewer labels first, then fewer characters, then code-unit order: the plainest example. */
function plainer(a: string, b: string): boolean {
  const la = a.split(".").length;
  const lb = b.split(".").length;
  if (la !== lb) return la < lb;
  if (a.length !== b.length) return a.length < b.length;
  return a < b;
}

/** Each domain with a rule strictly beneath it → the plainest such rule. Sorted by domain. */
export function suffixesBeneath(rules: readonly Rule[]): Array<[domain: string, example: string]> {
  const beneath = new Map<string, string>();
  for (const { rule } of rules) {
    const labels = rule.split(".");
    for (let i = 1; i < labels.length; i++) {
      const domain = labels.slice(i).join(".");
      const known = beneath.get(domain);
      if (known === undefined || plainer(rule, known)) beneath.set(domain, rule);
    }
  }
  return [...beneath].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** What identifies a copy of the list: its sha256, and the VERSION and COMMIT lines of its header, if any. */
export interface ListId {
  readonly sha256: string;
  readonly version: string | undefined;
  readonly commit: string | undefined;
}

export function listId(text: string): ListId {
  let version: string | undefined;
  let commit: string | undefined;
  // The header: the comment lines before the first rule (publicsuffix.org's copies, and so the PyPI
  // package's, carry `// VERSION: 2026-…_UTC` and `// COMMIT: <hash>` there).
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed !== "" && !trimmed.startsWith("//")) break;
    const field = /^\/\/\s*(VERSION|COMMIT):\s*(\S.*?)\s*$/.exec(trimmed);
    if (field?.[1] === "VERSION") version ??= field[2];
    if (field?.[1] === "COMMIT") commit ??= field[2];
  }
  return { sha256: createHash("sha256").update(text).digest("hex"), version, commit };
}

const SOURCE_LINE = "// list: ";
const SHA_LINE = "// list sha256: ";

/**
 * The generated module's text. `source` says where the list came from (shown in the header); the rest is
 * a function of the list's text alone.
 */
export function generateModule(text: string, source: string): string {
  const rules = readRules(text, source);
  const table = suffixesBeneath(rules);
  const id = listId(text);
  const published = /^(\d{4}-\d{2}-\d{2})/.exec(id.version ?? "")?.[1];
  const out = [
    `// generated by scripts/gen-public-suffix-beneath.ts from the Public Suffix List — do not edit.`,
    `${SOURCE_LINE}${source}`,
    `// list VERSION: ${id.version ?? "(none in its header)"}`,
    `// list COMMIT: ${id.commit ?? "(none in its header)"}`,
    `${SHA_LINE}${id.sha256}`,
    `//`,
    `// The table is only as fresh as that list${published === undefined ? "" : ` (published ${published})`}: a public suffix registered`,
    `// later is not here, so a credentialed wildcard over the domain above it is not refused. tldts's own`,
    `// copy of the list still decides whether a domain is itself a public suffix.`,
    `// Refresh: set PSL_VERSION in scripts/gen-public-suffix-beneath.ts to a newer release of the PyPI package`,
    `// ${PSL_PACKAGE} (released about weekly), run \`node scripts/gen-public-suffix-beneath.ts\` and commit`,
    `// this file. \`--check\` (CI) regenerates from the pinned release and compares byte for byte.`,
    `//`,
    `// ${table.length} domains have one or more of the list's ${rules.length} public suffixes strictly beneath them. Each`,
    `// entry is "domain labels": the labels that, put in front of the domain, make its plainest such suffix`,
    `// (\`*\` for a wildcard rule). Plain strings, split on first use: nothing runs at module load.`,
    ``,
    `export const SUFFIXES_BENEATH: readonly string[] = [`,
    ...table.map(([domain, example]) => `  ${JSON.stringify(`${domain} ${example.slice(0, -domain.length - 1)}`)},`),
    `];`,
    ``,
  ];
  return out.join("\n");
}

/** The source and sha256 a generated table records, or undefined when its header has neither. */
export function recordedList(table: string): { source: string; sha256: string } | undefined {
  let source: string | undefined;
  let sha256: string | undefined;
  for (const line of table.split("\n")) {
    if (!line.startsWith("//")) break;
    if (line.startsWith(SOURCE_LINE)) source = line.slice(SOURCE_LINE.length);
    if (line.startsWith(SHA_LINE)) sha256 = line.slice(SHA_LINE.length);
  }
  return source !== undefined && sha256 !== undefined && /^[0-9a-f]{64}$/.test(sha256) ? { source, sha256 } : undefined;
}

function shown(path: string): string {
  const rel = relative(REPO_ROOT, path);
  const inside = rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
  return (inside ? rel : path).split(sep).join("/");
}

/** The list could not be had from PyPI; the message says why and what fixes it. */
export class FetchError extends Error {}

/** The last few non-empty lines of a tool's output, on one line: enough to see why it failed. */
function tail(output: string): string {
  const lines = output.split("\n").map((line) => line.trim()).filter((line) => line !== "");
  return lines.slice(-4).join(" | ");
}

/** Runs python3; on failure throws a FetchError saying what failed and how to fix it (`fix`, for a failing run). */
function python(args: readonly string[], fix: string): string {
  // pip's own timeout and retries bound a slow index; this bounds the rest.
  const r = spawnSync("python3", args, { encoding: "utf8", timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
  if (r.error !== undefined) {
    const missing = (r.error as NodeJS.ErrnoException).code === "ENOENT";
    throw new FetchError(
      missing
        ? "python3 is not on PATH (the generator runs its pip to fetch the list): install Python 3 with pip (Debian: apt-get install python3 python3-pip)"
        : `python3 failed to run: ${r.error.message}`,
    );
  }
  if (r.status !== 0) {
    const output = `${r.stdout}\n${r.stderr}`;
    if (/No module named pip\b/.test(output)) throw new FetchError("python3 has no pip: install it (Debian: apt-get install python3-pip)");
    throw new FetchError(`\`python3 ${args.join(" ")}\` exited ${r.status ?? r.signal}: ${tail(output)}. Fix: ${fix}`);
  }
  return r.stdout;
}

/**
 * Downloads the wheel of publicsuffixlist==`version` into `dest` with pip; returns its path. Throws a
 * FetchError naming the fix when python3, pip or the registry is not there.
 */
export function downloadWheel(dest: string, version: string = PSL_VERSION): string {
  const spec = `${PSL_PACKAGE}==${version}`;
  mkdirSync(dest, { recursive: true });
  python(
    ["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input", "--progress-bar", "off", "--dest", dest, spec],
    `make PyPI reachable for pip (network, proxy, or pip's index settings), and check that PSL_VERSION ` +
      `${version} in scripts/gen-public-suffix-beneath.ts is a release of ${PSL_PACKAGE} on PyPI`,
  );
  const prefix = `${PSL_PACKAGE}-${version}-`;
  const wheels = readdirSync(dest).filter((name) => name.startsWith(prefix) && name.endsWith(".whl"));
  if (wheels.length !== 1) throw new FetchError(`pip downloaded ${spec}, but ${dest} holds ${wheels.length} wheels named ${prefix}*.whl, not one`);
  return join(dest, wheels[0] as string);
}

/** The list's text, read out of a publicsuffixlist wheel (a zip) with Python's zipfile. */
export function listFromWheel(wheel: string): string {
  const script = "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1]) as z:\n    sys.stdout.buffer.write(z.read(sys.argv[2]))\n";
  return python(["-c", script, wheel, PSL_MEMBER], `check that the wheel holds ${PSL_MEMBER} (PSL_MEMBER in scripts/gen-public-suffix-beneath.ts)`);
}

/** The list as publicsuffixlist==`version` ships it: downloaded into a temporary directory, then removed. */
export function fetchPinnedList(version: string = PSL_VERSION): string {
  const temp = mkdtempSync(join(tmpdir(), "gen-public-suffix-"));
  try {
    return listFromWheel(downloadWheel(temp, version));
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** Runs the CLI; returns the exit code. */
export function main(argv: readonly string[]): number {
  let check = false;
  let listPath: string | undefined;
  let outPath = DEFAULT_OUT;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--check") check = true;
    else if (a === "--list" && argv[i + 1] !== undefined) listPath = resolve(argv[++i] as string);
    else if (a === "--out" && argv[i + 1] !== undefined) outPath = resolve(argv[++i] as string);
    else {
      const usage = "[--check] [--list FILE] [--out FILE]";
      if (a === "--help" || a === "-h") {
        console.log(`usage: node scripts/gen-public-suffix-beneath.ts ${usage}   (default list: ${pypiSource()}, via pip)`);
        return 0;
      }
      console.error(`gen-public-suffix-beneath: unknown argument ${JSON.stringify(a)} (usage: ${usage})`);
      return 2;
    }
  }

  const source = listPath === undefined ? pypiSource() : shown(listPath);
  let list: string;
  if (listPath === undefined) {
    try {
      list = fetchPinnedList();
    } catch (err) {
      if (!(err instanceof FetchError)) throw err;
      console.error(
        `gen-public-suffix-beneath: ${check ? `cannot check ${shown(outPath)}: ` : ""}no Public Suffix List from ${source}: ${err.message}.` +
          (check ? "" : ` Or generate from a copy at hand with --list FILE (e.g. a download of ${DOWNLOAD}).`),
      );
      return 1;
    }
  } else {
    if (!existsSync(listPath)) {
      console.error(`gen-public-suffix-beneath: no Public Suffix List at ${source}: pass an existing file, e.g. a download of ${DOWNLOAD}, or drop --list to use ${pypiSource()}`);
      return 1;
    }
    try {
      list = readFileSync(listPath, "utf8");
    } catch (err) {
      console.error(`gen-public-suffix-beneath: ${(err as Error).message}`);
      return 1;
    }
  }

  let text: string;
  try {
    text = generateModule(list, source);
  } catch (err) {
    console.error(`gen-public-suffix-beneath: ${(err as Error).message}`);
    return 1;
  }
  const current = existsSync(outPath) ? readFileSync(outPath, "utf8") : undefined;

  if (check) {
    if (current === text) return 0;
    const recorded = current === undefined ? undefined : recordedList(current);
    const why =
      current === undefined
        ? "missing"
        : recorded === undefined
          ? "stale (its header records no list)"
          : recorded.source !== source
            ? `stale (generated from ${recorded.source}, not ${source})`
            : recorded.sha256 !== listId(list).sha256
              ? `stale (generated from another copy of ${source}: sha256 ${recorded.sha256.slice(0, 12)}…, not ${listId(list).sha256.slice(0, 12)}…)`
              : `stale (it is not what the generator makes from ${source}: edited by hand, or the generator changed)`;
    const args = `${listPath === undefined ? "" : ` --list ${shown(listPath)}`}${outPath === DEFAULT_OUT ? "" : ` --out ${shown(outPath)}`}`;
    console.error(`gen-public-suffix-beneath: ${shown(outPath)} is ${why}: run \`node scripts/gen-public-suffix-beneath.ts${args}\` and commit the result`);
    return 1;
  }

  if (current !== text) {
    mkdirSync(dirname(outPath), { recursive: true });
    writeFileSync(outPath, text);
    console.log(`gen-public-suffix-beneath: wrote ${shown(outPath)} from ${source}`);
  }
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
