// The code map in the README says what each folder of src/ may import; this holds the code to it. A folder's
// rule names the other src/ folders and the packages (npm names, `node:*` modules) it may reach.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

interface Rule {
  /** src/ folders this one may import from (its own is always allowed). */
  folders: readonly string[];
  /** Packages: exact names, or "node:*" for Node's built-ins. */
  packages: readonly string[];
}

/** Keep in step with "Map of the code" in README.md. */
const RULES: Record<string, Rule> = {
  shared: { folders: [], packages: [] },
  edge: { folders: ["shared"], packages: ["hono", "tldts"] },
  snippet: { folders: ["edge", "shared"], packages: [] },
  origin: { folders: ["shared"], packages: ["node:*", "postgres", "prom-client"] },
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** Every module specifier a file imports or re-exports, statically or with import(). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)"|(?:^|\n)\s*import\s+"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g)) {
    found.push((m[1] ?? m[2] ?? m[3])!);
  }
  return found;
}

/** What a file of `folder` imports that its rule does not allow, as "file: specifier". */
function violations(folder: string): string[] {
  const rule = RULES[folder]!;
  const out: string[] = [];
  for (const file of sourceFiles(join(SRC, folder))) {
    for (const spec of specifiers(file)) {
      if (spec.startsWith(".")) {
        const target = relative(SRC, resolve(dirname(file), spec)).split("/")[0]!;
        if (target !== folder && !rule.folders.includes(target)) out.push(`${relative(SRC, file)}: ${spec}`);
      } else {
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
        const allowed = rule.packages.includes(name) || (spec.startsWith("node:") && rule.packages.includes("node:*"));
        // A package's own subpath (`tldts/dist/...`) is a private path: never allowed.
        if (!allowed || (!spec.startsWith("node:") && spec !== name)) out.push(`${relative(SRC, file)}: ${spec}`);
      }
    }
  }
  return out;
}

describe("import boundaries of src/ (README, Map of the code)", () => {
  it("every folder of src/ has a rule", () => {
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.sort()).toEqual(Object.keys(RULES).sort());
  });

  for (const folder of Object.keys(RULES)) {
    it(`src/${folder} imports only what its rule allows`, () => {
      expect(violations(folder)).toEqual([]);
    });
  }

  it("finds a violation when there is one (the check itself can fail)", () => {
    expect(specifiers(fileURLToPath(import.meta.url))).toContain("node:fs");
    const saved = RULES.origin!;
    RULES.origin = { folders: ["shared"], packages: ["postgres", "prom-client"] };
    try {
      expect(violations("origin").some((v) => v.endsWith("node:http"))).toBe(true);
    } finally {
      RULES.origin = saved;
    }
  });
});
