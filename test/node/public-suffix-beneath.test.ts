// Runs in Node (vitest project `node`): the table of domains with a public suffix beneath them, generated
// from the Public Suffix List as the PyPI package `publicsuffixlist` ships it, at the release pinned in
// scripts/gen-public-suffix-beneath.ts, and the lookup the CORS configuration check makes with it
// (src/edge/config/public-suffix.ts; its use: test/edge/config.test.ts). The list itself is not in the
// repository: the generator's own cases use small lists written here (no network); the committed table is
// checked against the pinned release, downloaded from PyPI once for this file with the generator's own pip
// command (python3 with pip and PyPI are needed, in CI too: no skipping), then handed to the generator's CLI
// runs through pip's find-links so that they read the same wheel without downloading it again.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_OUT,
  downloadWheel,
  generateModule,
  listFromWheel,
  listId,
  PSL_VERSION,
  pypiSource,
  readRules,
  recordedList,
  suffixesBeneath,
} from "../../scripts/gen-public-suffix-beneath.ts";
import { isPublicSuffix, publicSuffixBeneath } from "../../src/edge/config/public-suffix.ts";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");
const SCRIPT = join(ROOT, "scripts/gen-public-suffix-beneath.ts");
const NODE = existsSync(join(ROOT, "node_modules/.bin/node")) ? join(ROOT, "node_modules/.bin/node") : process.execPath;
const dir = mkdtempSync(join(tmpdir(), "slim-edge-psl-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The generator's CLI in a child process; `env` is added to this process's environment. */
function gen(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(NODE, [SCRIPT, ...args], { encoding: "utf8", env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const SMALL_LIST = `// This Source Code Form is subject to the terms of the Mozilla Public License, v. 2.0.
// ===BEGIN ICANN DOMAINS===
com
uk
co.uk
*.ck
!www.ck
cn
公司.cn
io
// ===END ICANN DOMAINS===
// ===BEGIN PRIVATE DOMAINS===
us-east-1.amazonaws.com
*.compute.amazonaws.com
s3-website.amazonaws.com
s3.amazonaws.com
github.io
bar.foo.github.io
// ===END PRIVATE DOMAINS===
`;

// Each test runs the CLI (and so Node, and sometimes pip) a few times: more than vitest's default 5 s on a slow machine.
describe("the generator, on small lists (no network)", { timeout: 60_000 }, () => {
  it("maps every domain above a rule to its plainest rule beneath: fewest labels, then shortest", () => {
    const table = Object.fromEntries(suffixesBeneath(readRules(SMALL_LIST, "small.dat")));
    expect(table).toEqual({
      "amazonaws.com": "s3.amazonaws.com",
      "compute.amazonaws.com": "*.compute.amazonaws.com",
      com: "s3.amazonaws.com",
      uk: "co.uk",
      ck: "*.ck", // an exception (!www.ck) unmakes a suffix, so it adds nothing
      cn: "xn--55qx5d.cn", // Unicode rules in their ASCII form, as an Origin carries them
      io: "github.io",
      "github.io": "bar.foo.github.io",
      "foo.github.io": "bar.foo.github.io",
    });
  });

  it("--list FILE writes one \"domain labels\" string per domain, sorted, under a header naming the file", () => {
    const list = join(dir, "small.dat");
    const out = join(dir, "small.generated.ts");
    writeFileSync(list, SMALL_LIST);
    const r = gen(["--list", list, "--out", out]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const text = readFileSync(out, "utf8");
    expect(text).toBe(generateModule(SMALL_LIST, list));
    expect(text).toContain(`  "amazonaws.com s3",\n  "ck *",\n  "cn xn--55qx5d",\n  "com s3.amazonaws",\n`);
    expect(text).toContain(`\n// list: ${list}\n// list VERSION: (none in its header)\n// list COMMIT: (none in its header)\n`);
    expect(text).toContain("\n// 9 domains have one or more of the list's 13 public suffixes strictly beneath them.");
    expect(recordedList(text)).toEqual({ source: list, sha256: listId(SMALL_LIST).sha256 });

    // Unchanged bytes are not rewritten (nothing printed); the output is deterministic.
    expect(gen(["--list", list, "--out", out])).toMatchObject({ status: 0, stdout: "", stderr: "" });
    const again = join(dir, "small-again.generated.ts");
    expect(gen(["--list", list, "--out", again]).status).toBe(0);
    expect(readFileSync(again, "utf8")).toBe(text);
    expect(generateModule(SMALL_LIST, list)).toBe(generateModule(SMALL_LIST, list));
  });

  it("records the VERSION and COMMIT lines of the list's header, and the date they give", () => {
    const dated = `// VERSION: 2026-10-22_08-36-41_UTC\n// COMMIT: 8437e5262f13\n\n${SMALL_LIST}`;
    const text = generateModule(dated, pypiSource("1.1.2.20261023"));
    expect(text).toContain("\n// list: PyPI publicsuffixlist==1.1.2.20261023\n// list VERSION: 2026-10-22_08-36-41_UTC\n// list COMMIT: 8437e5262f13\n");
    expect(text).toContain("only as fresh as that list (published 2026-10-22)");
    expect(generateModule(SMALL_LIST, "small.dat")).toContain("only as fresh as that list: a public suffix");
  });

  it("--check --list FILE compares byte for byte, fails on any difference with the fix, and never writes", () => {
    const list = join(dir, "check.dat");
    const out = join(dir, "check.generated.ts");
    writeFileSync(list, SMALL_LIST);
    expect(gen(["--list", list, "--out", out]).status).toBe(0);
    const text = readFileSync(out, "utf8");
    expect(gen(["--check", "--list", list, "--out", out])).toMatchObject({ status: 0, stdout: "", stderr: "" });

    // Same list, output the generator would no longer make (edited by hand, or an uncommitted generator change).
    writeFileSync(out, text.replace(`  "ck *",\n`, ""));
    const stale = gen(["--check", "--list", list, "--out", out]);
    expect(stale.status).toBe(1);
    expect(stale.stderr).toContain("is stale (it is not what the generator makes from");
    expect(stale.stderr).toContain(`run \`node scripts/gen-public-suffix-beneath.ts --list ${list} --out ${out}\` and commit the result`);

    // Another list than the table was made from: a failure too, naming both hashes.
    writeFileSync(out, text);
    writeFileSync(list, `${SMALL_LIST}x.y.example\n`);
    const moved = gen(["--check", "--list", list, "--out", out]);
    expect(moved.status).toBe(1);
    expect(moved.stderr).toContain(`stale (generated from another copy of ${list}: sha256 ${listId(SMALL_LIST).sha256.slice(0, 12)}`);
    expect(readFileSync(out, "utf8")).toBe(text); // --check never writes

    // No table, or one whose header records no list.
    const none = gen(["--check", "--list", list, "--out", join(dir, "none.ts")]);
    expect(none.status).toBe(1);
    expect(none.stderr).toContain("is missing");
    expect(existsSync(join(dir, "none.ts"))).toBe(false);
    writeFileSync(out, "export const SUFFIXES_BENEATH: readonly string[] = [];\n");
    const bare = gen(["--check", "--list", list, "--out", out]);
    expect(bare.status).toBe(1);
    expect(bare.stderr).toContain("stale (its header records no list)");
  });

  it("names the fix when the --list file is missing", () => {
    const r = gen(["--list", join(dir, "missing.dat"), "--out", join(dir, "missing.generated.ts")]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("no Public Suffix List at");
    expect(r.stderr).toContain("https://publicsuffix.org/list/public_suffix_list.dat");
    expect(r.stderr).toContain(`drop --list to use PyPI publicsuffixlist==${PSL_VERSION}`);
    expect(existsSync(join(dir, "missing.generated.ts"))).toBe(false);
  });

  it("names the line of a rule it cannot read", () => {
    expect(() => readRules("com\n*.*.bad\n", "bad.dat")).toThrow('bad.dat:2: "*.*.bad" is not a rule this generator understands');
  });

  it("fails, naming the fix, when pip cannot get the pinned release (no index, nothing found)", () => {
    const empty = join(dir, "no-wheels");
    mkdirSync(empty, { recursive: true });
    // pip's own settings: no index, find-links an empty folder. Nothing is downloaded.
    const offline = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: empty };
    const check = gen(["--check"], offline);
    expect(check.status).toBe(1);
    expect(check.stdout).toBe("");
    expect(check.stderr).toContain(`cannot check src/edge/config/public-suffix-beneath.generated.ts: no Public Suffix List from PyPI publicsuffixlist==${PSL_VERSION}`);
    expect(check.stderr).toContain(`python3 -m pip download --no-deps --only-binary=:all:`);
    expect(check.stderr).toContain("No matching distribution found");
    expect(check.stderr).toContain("Fix: make PyPI reachable for pip");

    const out = join(dir, "offline.generated.ts");
    const write = gen(["--out", out], offline);
    expect(write.status).toBe(1);
    expect(write.stderr).toContain("Or generate from a copy at hand with --list FILE");
    expect(existsSync(out)).toBe(false);
  });

  it("fails, naming the fix, when there is no python3", () => {
    const r = gen(["--check"], { PATH: join(dir, "no-bin") });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("python3 is not on PATH");
    expect(r.stderr).toContain("apt-get install python3 python3-pip");
  });
});

describe("the committed table and the pinned release from PyPI", { timeout: 60_000 }, () => {
  // One download per run of this file, with the generator's own pip command; the CLI runs below read the
  // same wheel through pip's find-links, with no index, so they make no further download.
  const wheels = join(dir, "wheels");
  let list = "";
  let local: Record<string, string> = {};
  beforeAll(() => {
    list = listFromWheel(downloadWheel(wheels));
    local = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels };
  }, 180_000);

  it("the committed table is what the generator makes from the pinned release's list", () => {
    const committed = readFileSync(DEFAULT_OUT, "utf8");
    const id = listId(list);
    expect(recordedList(committed)).toEqual({ source: `PyPI publicsuffixlist==${PSL_VERSION}`, sha256: id.sha256 });
    expect(id.version).toMatch(/^\d{4}-\d{2}-\d{2}_/); // the list's header dates it...
    expect(committed).toContain(`\n// list VERSION: ${id.version}\n// list COMMIT: ${id.commit}\n`); // ...and the table says so
    expect(generateModule(list, pypiSource())).toBe(committed);
  });

  it("--check passes on the committed table", () => {
    const r = gen(["--check"], local);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("");
    expect(r.status).toBe(0);
  });

  it("--check fails on a stale table, naming the fix, and never writes", () => {
    const committed = readFileSync(DEFAULT_OUT, "utf8");
    const out = join(dir, "stale.generated.ts");

    const edited = committed.replace(`  "amazonaws.com s3",\n`, "");
    expect(edited).not.toBe(committed);
    writeFileSync(out, edited);
    const r = gen(["--check", "--out", out], local);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`is stale (it is not what the generator makes from PyPI publicsuffixlist==${PSL_VERSION}`);
    expect(r.stderr).toContain(`run \`node scripts/gen-public-suffix-beneath.ts --out ${out}\` and commit the result`);
    expect(readFileSync(out, "utf8")).toBe(edited);

    // A table from an older release (the pin was bumped, the table not regenerated).
    writeFileSync(out, committed.replace(`==${PSL_VERSION}\n`, "==1.1.2.20250101\n"));
    const older = gen(["--check", "--out", out], local);
    expect(older.status).toBe(1);
    expect(older.stderr).toContain(`stale (generated from PyPI publicsuffixlist==1.1.2.20250101, not PyPI publicsuffixlist==${PSL_VERSION})`);

    // A table made from another copy with --list does not pass the default check either.
    const copy = join(dir, "copy.dat");
    writeFileSync(copy, list);
    expect(gen(["--list", copy, "--out", out]).status).toBe(0);
    const fromCopy = gen(["--check", "--out", out], local);
    expect(fromCopy.status).toBe(1);
    expect(fromCopy.stderr).toContain(`stale (generated from ${copy}, not PyPI publicsuffixlist==${PSL_VERSION})`);
  });

  it("is deterministic: generating twice gives the committed bytes, and leaves no temporary files", () => {
    const temp = join(dir, "tmp");
    mkdirSync(temp, { recursive: true });
    const env = { ...local, TMPDIR: temp };
    const a = join(dir, "a.generated.ts");
    const b = join(dir, "b.generated.ts");
    const first = gen(["--out", a], env);
    expect(first.stderr).toBe("");
    expect(first.stdout).toBe(`gen-public-suffix-beneath: wrote ${a} from PyPI publicsuffixlist==${PSL_VERSION}\n`);
    expect(gen(["--out", b], env).status).toBe(0);
    const committed = readFileSync(DEFAULT_OUT, "utf8");
    expect(readFileSync(a, "utf8")).toBe(committed);
    expect(readFileSync(b, "utf8")).toBe(committed);
    expect(readdirSync(temp)).toEqual([]); // the wheel and its download folder are gone
  });
});

describe("publicSuffixBeneath (the committed table)", () => {
  it("finds a suffix beneath a domain that is not one itself, and nothing beneath an ordinary name", () => {
    expect(isPublicSuffix("amazonaws.com")).toBe(false);
    expect(publicSuffixBeneath("amazonaws.com")).toBe("s3.amazonaws.com");
    expect(publicSuffixBeneath("compute.amazonaws.com")).toBe("*.compute.amazonaws.com");
    expect(publicSuffixBeneath("co.uk")).toMatch(/^[a-z0-9-]+\.co\.uk$/); // a public suffix with private ones beneath
    expect(publicSuffixBeneath("uk")).toBe("ac.uk");
    expect(publicSuffixBeneath("github.io")).toBeUndefined(); // a public suffix, refused as one (isPublicSuffix)
    expect(publicSuffixBeneath("example.com")).toBeUndefined();
    expect(publicSuffixBeneath("mybucket.s3.amazonaws.com")).toBeUndefined();
    expect(publicSuffixBeneath("s3.amazonaws.com.evil.example")).toBeUndefined();
    expect(publicSuffixBeneath("com")).toMatch(/\.com$/);
  });

  it("knows suffixes newer than Debian bookworm's list (2023-02): AWS Cognito's, Lambda function URLs'", () => {
    // Debian's copy had none beneath these, so a credentialed wildcard over them was not refused.
    expect(publicSuffixBeneath("amazoncognito.com")).toMatch(/^auth[a-z0-9-]*\.[a-z0-9-]+\.amazoncognito\.com$/);
    expect(publicSuffixBeneath("on.aws")).toMatch(/\.on\.aws$/);
  });

  it("the examples it names for well-known domains are public suffixes for tldts too", () => {
    for (const domain of ["amazonaws.com", "compute.amazonaws.com", "uk", "co.uk", "amazoncognito.com", "on.aws"]) {
      const suffix = publicSuffixBeneath(domain)?.replace(/^\*/, "x");
      expect(suffix, domain).toBeDefined();
      expect(isPublicSuffix(suffix as string), suffix).toBe(true);
    }
  });

  it("leaves \"is itself a public suffix\" to tldts's list, not the table", () => {
    // A wildcard directly over a public suffix is refused whatever the table says.
    expect(isPublicSuffix("auth.af-south-1.amazoncognito.com")).toBe(true);
    expect(isPublicSuffix("github.io")).toBe(true);
    expect(isPublicSuffix("co.uk")).toBe(true);
    expect(isPublicSuffix("amazonaws.com")).toBe(false);
  });
});
